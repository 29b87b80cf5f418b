// The service worker: the app shell (the page, its styles, its modules, @kokoro-relay/client, the manifest and
// icons) is cached so the app opens without a network; each is fetched fresh when the network answers (network
// first), so an update shows at once. Nothing else is ever cached or even touched: not /config.json (it carries
// the token), not the agent's stream, not audio (which comes over the WebSocket anyway).

const CACHE = "kokoro-relay-shell-v1";

/** The app shell, relative to this worker's scope. tests/web/test_web_mobile.py checks it lists every file the page loads. */
const SHELL = [
  "./",
  "index.html",
  "style.css",
  "app.js",
  "agent_direct.js",
  "captions.js",
  "sse.js",
  "transcript.js",
  "wake_lock.js",
  "voice_picker.js",
  "manifest.webmanifest",
  "icons/icon-192.png",
  "icons/icon-512.png",
  "client/index.js",
  "client/client.js",
  "client/connection.js",
  "client/emitter.js",
  "client/languages.js",
  "client/opus.js",
  "client/pcm.js",
  "client/platform.js",
  "client/session.js",
  "client/sink.js",
  "client/speech_length.js",
  "client/startup_buffer.js",
  "client/voices.js",
  "client/web_audio_sink.js",
];

const sw = /** @type {any} */ (self);
const shellUrls = new Set(SHELL.map((path) => new URL(path, sw.registration.scope).href));

sw.addEventListener("install", (/** @type {any} */ event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => sw.skipWaiting()),
  );
});

sw.addEventListener("activate", (/** @type {any} */ event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name !== CACHE).map((name) => caches.delete(name))))
      .then(() => sw.clients.claim()),
  );
});

sw.addEventListener("fetch", (/** @type {any} */ event) => {
  const request = /** @type {Request} */ (event.request);
  const url = new URL(request.url);
  url.search = "";
  if (request.method !== "GET" || !shellUrls.has(url.href)) return; // not the shell: the network, uncached
  event.respondWith(
    fetch(request)
      .then((response) => {
        if (response.ok) {
          const copy = response.clone();
          void caches.open(CACHE).then((cache) => cache.put(request, copy));
        }
        return response;
      })
      .catch(() => caches.match(request, { ignoreSearch: true }).then((cached) => cached ?? Response.error())),
  );
});
