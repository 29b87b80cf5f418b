// The page: a conversation with the agent. Each turn is a pair of bubbles stacked in order; the composer stays
// pinned at the bottom and the options fold away. The gateway route uses @kokoro-relay/client (./client/, the
// package in clients/js): connect(), send() → a Turn whose events fill the bubble while its audio goes to the Web
// Audio sink. The agent-direct route (local mode) reads the agent's SSE stream (agent_direct.js) into the same
// library Turn: Opus where this browser decodes it, the same sink, start-up buffer and "poor connection".
//
// Phone behaviour: audio is unlocked on the first tap anywhere (mobile browsers keep an AudioContext suspended
// until a gesture), the screen is kept on while a reply plays (wake_lock.js), and when the page comes back (shown
// again, resumed from a freeze, back online) the client reconnects and resumes at once; when the browser says the
// network is gone, the socket is dropped at once rather than left to die slowly. sw.js caches the app shell.
//
// The newest turn's elements carry the ids #reply, #turn-status, #ttfb, #ttfa and #audio-seconds.
//
// Test hooks (tests/web/test_web_*.py): window.relayApp (ready promise, config, metrics: the Turn on screen,
// captions included; audio and wake-lock state), window.relayPlayer (the WebAudioSink: schedule record and
// samples), window.relayClient (the RelayClient: dropConnection(), stats, connection.sent).

import { AgentDirectClient } from "./agent_direct.js";
import { CaptionTrack, alignToReply } from "./captions.js";
import { WebAudioSink, connect, firstAudibleIndex, newTurnId } from "./client/index.js";
import { WordStream } from "./transcript.js";
import { SpeechPicker } from "./voice_picker.js";
import { ScreenWakeLock } from "./wake_lock.js";

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const ui = {
  form: /** @type {HTMLFormElement} */ ($("composer")),
  prompt: /** @type {HTMLTextAreaElement} */ ($("prompt")),
  mode: /** @type {HTMLSelectElement} */ ($("mode")),
  captions: /** @type {HTMLInputElement} */ ($("captions")),
  voice: /** @type {HTMLSelectElement} */ ($("voice")),
  voiceCustom: /** @type {HTMLInputElement} */ ($("voice-custom")),
  voiceCustomField: $("voice-custom-field"),
  lang: /** @type {HTMLSelectElement} */ ($("lang")),
  send: /** @type {HTMLButtonElement} */ ($("send")),
  stop: /** @type {HTMLButtonElement} */ ($("stop")),
  newConversation: /** @type {HTMLButtonElement} */ ($("new-conversation")),
  who: $("who"),
  connection: $("connection"),
  connectionText: $("connection-text"),
  audioFormat: $("audio-format"),
  conversation: $("conversation"),
  turns: $("turns"),
  empty: $("empty"),
  template: /** @type {HTMLTemplateElement} */ ($("turn-template")),
  notice: $("notice"),
};

const STATE_LABELS = {
  idle: "Idle",
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  closed: "Disconnected",
};

const CURRENT_IDS = /** @type {const} */ (["reply", "turn-status", "ttfb", "ttfa", "audio-seconds"]);

/**
 * The page's configuration: /config.json as the local stack serves it ({gateway_url, token, agent_url}),
 * overridable by query parameters (?gateway=...&token=...; ?audio=pcm asks for PCM even where Opus decodes).
 */
async function loadConfig() {
  /** @type {{gateway_url?: string, token?: string, agent_url?: string}} */
  let config = {};
  try {
    const response = await fetch("config.json", { cache: "no-store" });
    if (response.ok) config = await response.json();
  } catch {
    // No config.json (a static host): query parameters or nothing.
  }
  const params = new URLSearchParams(location.search);
  return {
    gatewayUrl: params.get("gateway") ?? config.gateway_url ?? "",
    token: params.get("token") ?? config.token ?? "",
    tokenFromQuery: params.has("token"),
    /** @type {"pcm" | "opus"} Opus unless ?audio=pcm (the library still falls back to PCM where it cannot decode) */
    audio: params.get("audio") === "pcm" ? "pcm" : "opus",
    agentEndpoint: params.get("agent") ?? (config.agent_url ? `${config.agent_url}/invocations` : "agent/invocations"),
  };
}

/**
 * A token for a (re)connect: the local stack's /config.json mints a fresh dev token per request, which is this
 * page's "refresh"; a token given in the query string is all there is.
 * @param {Awaited<ReturnType<typeof loadConfig>>} config
 */
async function freshToken(config) {
  if (!config.tokenFromQuery) {
    const response = await fetch("config.json", { cache: "no-store" });
    if (response.ok) {
      const body = await response.json();
      if (typeof body.token === "string" && body.token !== "") config.token = body.token;
    }
  }
  return config.token;
}

/**
 * The user named in a JWT (display only: the gateway's authorizer is what verifies it).
 * @param {string} token
 */
function tokenSubject(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(part + "=".repeat((4 - (part.length % 4)) % 4)));
    return typeof claims.sub === "string" ? claims.sub : null;
  } catch {
    return null;
  }
}

class Captions {
  /** The caption state of one turn: the timed words, where each sits in the reply, what is highlighted. */
  constructor() {
    this.track = new CaptionTrack();
    /** @type {Array<[number, number]>} for timed word i, its rendered reply words [first, last] */
    this.spans = [];
    this.next = 0;
    /** @type {number[]} for timed word i, where the search for its place in the reply started */
    this.from = [];
    /** the timed word highlighted now (-1: none yet) */
    this.current = -1;
    /** every rendered reply word up to this index has been spoken */
    this.spokenThrough = -1;
    /** @type {{index: number, at: number, start: number}[]} each timed word as it got highlighted, with the player's
     * clock then and the word's start as known then (an estimate may be replaced by its final time later) */
    this.log = [];
  }
}

class TurnView {
  /**
   * One turn on screen (its two bubbles) and its metrics in ms since Send (performance.now clock).
   * @param {string} id
   * @param {string} prompt
   * @param {boolean} timings whether the turn asked for word timings (captions)
   */
  constructor(id, prompt, timings) {
    this.id = id;
    this.sentAt = performance.now();
    /** @type {number | null} */
    this.firstByteMs = null;
    /** @type {number | null} */
    this.firstAudibleMs = null;
    this.samples = 0;
    this.status = "sending";
    /** The turn's speech waits in line for the busy speech service (shown as "voice starting…" until audio). */
    this.voiceWaiting = false;
    /** The link delivers this turn's audio slower than real time, or its playback stalled: "poor connection". */
    this.poorLink = false;
    this.words = new WordStream();
    /** @type {Captions | null} */
    this.captions = timings ? new Captions() : null;
    /** @type {number | null} the played_ms the Stop button's cancel carried */
    this.cancelPlayedMs = null;
    /** @type {import("./client/client.js").Turn | null} the library's turn (gateway route) */
    this.turn = null;
    const fragment = /** @type {DocumentFragment} */ (ui.template.content.cloneNode(true));
    this.element = /** @type {HTMLElement} */ (fragment.firstElementChild);
    /** @param {string} name */
    const part = (name) => /** @type {HTMLElement} */ (this.element.querySelector(`.${name}`));
    part("user").textContent = prompt;
    this.reply = part("transcript");
    this.statusEl = part("turn-status");
    this.ttfb = part("ttfb");
    this.ttfa = part("ttfa");
    this.audioSeconds = part("audio-seconds");
    /** the model that answered, from the turn's agent_start (e.g. "bedrock:local.smollm2-135m-instruct") */
    this.model = part("model");
    for (const id of CURRENT_IDS) document.getElementById(id)?.removeAttribute("id");
    this.reply.id = "reply";
    this.statusEl.id = "turn-status";
    this.ttfb.id = "ttfb";
    this.ttfa.id = "ttfa";
    this.audioSeconds.id = "audio-seconds";
    ui.empty.hidden = true;
    ui.turns.append(this.element);
  }
}

const player = new WebAudioSink();
// The sink waits for a start-up buffer on a slow link (rather than chopping words) and reports it: the turn then
// says "poor connection" while it streams, and keeps data-link="poor".
player.on("link", ({ slow }) => {
  if (turn !== null) notePlaybackStart(turn);
  if (slow) notePoorLink();
});
player.on("stall", () => notePoorLink());
const speech = new SpeechPicker({ voice: ui.voice, custom: ui.voiceCustom, customField: ui.voiceCustomField, lang: ui.lang });
const wakeLock = new ScreenWakeLock();
/** @type {TurnView | null} */
let turn = null;
/** @type {import("./client/client.js").RelayClient | null} */
let client = null;
/** @type {AgentDirectClient | null} */
let direct = null;
let audioUnlocked = false;

function route() {
  const checked = /** @type {HTMLInputElement | null} */ (document.querySelector('input[name="route"]:checked'));
  return checked?.value === "direct" ? "direct" : "gateway";
}

/**
 * @param {string} state
 * @param {string} detail
 */
function showConnection(state, detail) {
  ui.connection.dataset.state = state;
  ui.connectionText.textContent = STATE_LABELS[/** @type {keyof typeof STATE_LABELS} */ (state)] ?? state;
  ui.connection.title = detail;
}

/**
 * The small label that says how the speech travels: "Opus" (decoded by the browser) or "PCM", and why in its title.
 * @param {string} format "opus" or "pcm"
 * @param {string} detail
 */
function showAudioFormat(format, detail) {
  ui.audioFormat.dataset.format = format;
  ui.audioFormat.textContent = format === "opus" ? "Opus" : "PCM";
  ui.audioFormat.title = detail;
}

/** @param {string | null} text */
function showNotice(text) {
  ui.notice.hidden = text === null;
  ui.notice.textContent = text ?? "";
}

/** @param {number | null} ms */
const fmtMs = (ms) => (ms === null ? "–" : `${Math.round(ms)} ms`);

/** @param {TurnView} view */
function renderMetrics(view) {
  view.ttfb.textContent = fmtMs(view.firstByteMs);
  view.ttfa.textContent = fmtMs(view.firstAudibleMs);
  view.audioSeconds.textContent = `${(view.samples / player.sampleRate).toFixed(2)} s`;
  const waiting = view.voiceWaiting && view.status === "streaming";
  const poor = view.poorLink && view.status === "streaming";
  view.statusEl.textContent = waiting ? "voice starting…" : poor ? "poor connection" : view.status;
  view.statusEl.dataset.status = waiting ? "voice-waiting" : poor ? "poor-connection" : view.status;
}

/**
 * Time to first audible audio when the sink starts playing what its start-up buffer held (the audio events before
 * it had nothing scheduled to time).
 * @param {TurnView} view
 */
function notePlaybackStart(view) {
  const first = player.scheduled[0];
  if (view.firstAudibleMs !== null || first === undefined || player.context === null) return;
  const index = firstAudibleIndex(player.scheduledSamples());
  if (index < 0) return;
  const playsIn = first.start + index / player.sampleRate - player.context.currentTime;
  view.firstAudibleMs = performance.now() + Math.max(0, playsIn) * 1000 - view.sentAt;
}

/** The current turn's audio comes slower than real time, or stalled (the sink's link and stall events). */
function notePoorLink() {
  if (turn === null) return;
  turn.poorLink = true;
  turn.element.dataset.link = "poor";
  renderMetrics(turn);
}

/**
 * Say which model answered (every turn's agent_start names it).
 * @param {TurnView} view
 * @param {string} model
 */
function showModel(view, model) {
  view.model.textContent = model || "–";
}

/** Keep the newest text in sight while it streams, unless the reader scrolled up. */
function followConversation() {
  const c = ui.conversation;
  if (c.scrollHeight - c.scrollTop - c.clientHeight < 160) c.scrollTop = c.scrollHeight;
}

/**
 * @param {TurnView} view
 * @param {string} delta
 */
function appendText(view, delta) {
  for (const op of view.words.push(delta)) {
    if (op.kind === "space") {
      view.reply.append(op.text);
    } else if (op.extend) {
      const last = view.reply.querySelector(`.word[data-index="${op.index}"]`);
      if (last !== null) last.textContent += op.text;
    } else {
      const span = document.createElement("span");
      span.className = "word";
      span.dataset.index = String(op.index);
      span.dataset.char = String(op.charOffset);
      span.textContent = op.text;
      view.reply.append(span);
    }
  }
  followConversation();
}

/**
 * Audio metrics for samples the sink has just scheduled (the gateway route: the library wrote them to the sink).
 * @param {TurnView} view
 * @param {Int16Array} samples
 * @param {number | null} start the context time the sink scheduled them at (null: dropped after a stop)
 */
function noteAudio(view, samples, start) {
  const now = performance.now();
  if (view.firstByteMs === null) view.firstByteMs = now - view.sentAt;
  if (view.firstAudibleMs === null && start !== null && player.context !== null) {
    const index = firstAudibleIndex(samples);
    if (index >= 0) {
      const playsIn = start + index / player.sampleRate - player.context.currentTime;
      view.firstAudibleMs = now + Math.max(0, playsIn) * 1000 - view.sentAt;
    }
  }
  view.samples += samples.length;
  view.voiceWaiting = false;
  wakeLock.hold();
}

/**
 * The turn's speech waits in line for the busy speech service (either route): "voice starting…" until its audio.
 * @param {TurnView} view
 */
function noteWaiting(view) {
  if (view.status === "sending") view.status = "streaming";
  view.voiceWaiting = true;
}

/**
 * @param {TurnView} view
 * @param {import("./client/session.js").WordTiming[]} words
 * @param {number | null} [index] where the words go among the turn's timed words (null: after them); the words
 *   from there on are replaced (estimates made final)
 */
function addCaptions(view, words, index = null) {
  if (view.captions === null) return;
  const c = view.captions;
  c.track.add(words, index);
  if (index !== null && index < c.spans.length) {
    c.next = c.from[index];
    c.spans.length = index;
    c.from.length = index;
  }
  let from = c.next;
  for (const word of words) {
    const aligned = alignToReply([word], view.words.words(), from);
    c.from.push(from);
    c.spans.push(...aligned.spans);
    from = aligned.next;
  }
  c.next = from;
  followPlayback();
}

/**
 * Highlight the word the player's clock is in (or last passed), and mark every word before it spoken.
 * @param {TurnView} view
 * @param {Captions} c
 * @param {number} seconds
 */
function showCaptionAt(view, c, seconds) {
  /** @param {number} index a rendered reply word */
  const replyWord = (index) => view.reply.querySelector(`.word[data-index="${index}"]`);
  const index = c.track.highlightAt(seconds);
  if (index === c.current) return;
  if (c.current >= 0) {
    const [first, last] = c.spans[c.current];
    for (let j = first; j <= last; j++) replyWord(j)?.classList.remove("current");
  }
  c.current = index;
  if (index < 0) return;
  c.log.push({ index, at: seconds, start: c.track.words[index].start_s });
  const [first, last] = c.spans[index];
  for (let j = first; j <= last; j++) replyWord(j)?.classList.add("current");
  const through = Math.max(last, first - 1);
  for (let j = c.spokenThrough + 1; j <= through; j++) replyWord(j)?.classList.add("spoken");
  c.spokenThrough = Math.max(c.spokenThrough, through);
}

let following = false;

/** Follow the player's clock with the captions, one step per animation frame, while the turn can still speak. */
function followPlayback() {
  if (following) return;
  following = true;
  const step = () => {
    const view = turn;
    const c = view?.captions ?? null;
    if (view === null || c === null) {
      following = false;
      return;
    }
    showCaptionAt(view, c, player.playedSeconds());
    const ended = !["sending", "streaming", "cancelling"].includes(view.status);
    if (ended && (player.stopped || !player.playing)) {
      showCaptionAt(view, c, player.playedSeconds());
      following = false;
      return;
    }
    requestAnimationFrame(step);
  };
  requestAnimationFrame(step);
}

/**
 * Send while no turn runs; Stop while a turn runs or its audio still plays (stopping a reply after its end still
 * tells the agent what the listener heard).
 * @param {boolean} running
 */
function setRunning(running) {
  ui.send.disabled = running;
  ui.newConversation.disabled = running;
  ui.stop.disabled = !running && !player.playing;
  if (!running) afterPlayback();
}

/** Once the ended turn's audio has played out: disable Stop and let the screen sleep (unless a new turn runs). */
function afterPlayback() {
  const step = () => {
    if (ui.send.disabled) return; // a new turn took over
    if (!player.playing) {
      ui.stop.disabled = true;
      wakeLock.release();
    } else requestAnimationFrame(step);
  };
  requestAnimationFrame(step);
}

/**
 * The end of a turn, whichever route it came by.
 * @param {TurnView} view
 * @param {string} outcome
 * @param {string | null} code
 * @param {string | null} message
 */
function endTurn(view, outcome, code, message) {
  view.status = outcome;
  if (outcome !== "completed") player.stop();
  if (view === turn) setRunning(false);
  if (code !== null) showNotice(`${message} (${code})`);
  renderMetrics(view);
}

/**
 * Direct (SSE) mode's events beyond the Turn's own (agent_direct.js maps the agent's events to the session's): the
 * model that answered, as the gateway route's client "event" listener shows it.
 * @param {import("./client/session.js").ClientEvent} event
 */
function onDirectEvent(event) {
  const view = turn;
  if (view === null || event.type !== "turn_started") return;
  if (view.status === "sending") view.status = "streaming";
  showModel(view, event.model);
  renderMetrics(view);
}

/**
 * The direct route's client: Opus where this browser decodes it (as the gateway route), the page's sink.
 * @param {Awaited<ReturnType<typeof loadConfig>>} config
 */
function ensureDirect(config) {
  direct ??= new AgentDirectClient({ endpoint: config.agentEndpoint, onEvent: onDirectEvent, sink: player, audio: config.audio });
  Object.assign(window, { relayDirect: direct });
  return direct;
}

/** @param {Awaited<ReturnType<typeof loadConfig>>} config */
function ensureClient(config) {
  if (client !== null) return client;
  if (!config.gatewayUrl) throw new Error("no gateway URL: serve config.json or add ?gateway=wss://...");
  // Opus where this browser decodes it (WebCodecs AudioDecoder), else the library asks for PCM and says why.
  client = connect({ url: config.gatewayUrl, getToken: () => freshToken(config), audio: config.audio });
  void client.audioReady.then((choice) => showAudioFormat(choice.format, choice.reason ?? `Speech travels as Opus, decoded by ${choice.decoder}`));
  client.on("state", ({ state, detail }) => showConnection(state, detail));
  client.on("rejected", ({ code, message }) => showNotice(`${message} (${code})`));
  client.on("protocolError", ({ message }) => console.warn("relay:", message));
  client.on("event", (event) => {
    if (turn !== null && event.type === "turn_started" && event.turnId === turn.id) showModel(turn, event.model);
    if (turn !== null && event.type === "accepted" && event.turnId === turn.id && turn.status === "sending") {
      turn.status = "streaming";
      renderMetrics(turn);
    }
  });
  Object.assign(window, { relayClient: client, relaySession: client.session });
  return client;
}

/**
 * Follow a library turn on screen.
 * @param {TurnView} view
 * @param {import("./client/client.js").Turn} relayTurn
 */
function bindTurn(view, relayTurn) {
  view.turn = relayTurn;
  const streaming = () => {
    if (view.status === "sending") view.status = "streaming";
  };
  relayTurn.on("text", ({ text }) => {
    streaming();
    appendText(view, text);
    renderMetrics(view);
  });
  relayTurn.on("speechWaiting", () => {
    noteWaiting(view);
    renderMetrics(view);
  });
  relayTurn.on("audio", ({ samples }) => {
    streaming();
    const last = player.scheduled.at(-1);
    noteAudio(view, samples, player.stopped || last === undefined ? null : last.start);
    renderMetrics(view);
  });
  relayTurn.on("words", ({ words, index }) => addCaptions(view, words, index));
  relayTurn.on("end", ({ outcome, code, message }) => endTurn(view, outcome, code, message));
}

/** @param {Awaited<ReturnType<typeof loadConfig>>} config */
function startTurn(config) {
  const prompt = ui.prompt.value.trim();
  if (prompt === "") {
    showNotice("Type a message first.");
    ui.prompt.focus();
    return;
  }
  showNotice(null);
  unlockAudio(); // inside the tap: the browser lets the context play
  player.begin();
  const options = {
    prompt,
    mode: /** @type {"bidi" | "batch"} */ (ui.mode.value === "batch" ? "batch" : "bidi"),
    ...speech.choice(), // voice and lang (null: the server's default voice, the voice's own language)
    turnId: newTurnId(),
    timings: ui.captions.checked,
  };
  const view = new TurnView(options.turnId, prompt, options.timings);
  turn = view;
  ui.prompt.value = "";
  setRunning(true);
  renderMetrics(view);
  followConversation();
  wakeLock.hold();
  if (route() === "direct") {
    const agent = ensureDirect(config);
    const relayTurn = agent.send(options); // begins the sink's stream again, as the gateway route's send does
    showAudioFormat(relayTurn.audio, relayTurn.audio === "opus" ? "Speech travels as Opus, decoded by this browser" : (agent.audioChoice.reason ?? "Speech travels as raw PCM"));
    bindTurn(view, relayTurn);
  } else {
    // player.begin() already started the stream: the sink is passed so Stop can ask it what was heard.
    const relayTurn = ensureClient(config).send(prompt, { ...options, sink: player });
    showAudioFormat(relayTurn.audio, relayTurn.audio === "opus" ? "Speech travels as Opus, decoded by this browser" : (client?.audioChoice.reason ?? "Speech travels as raw PCM"));
    bindTurn(view, relayTurn);
    // Too long to send (the library refused it, or the gateway closed over it): give the text back to shorten.
    relayTurn.on("end", ({ code }) => code === "limit_exceeded" && ui.prompt.value === "" && (ui.prompt.value = prompt));
  }
}

function stopTurn() {
  const view = turn;
  if (view === null) {
    player.stop();
    return;
  }
  // What the listener heard, by the player's schedule: the agent keeps only those words, whether the turn still
  // runs (it is cancelled) or already ended while its audio played on (a late barge-in).
  const running = ["sending", "streaming"].includes(view.status);
  if (running) view.status = "cancelling";
  else ui.stop.disabled = true;
  if (view.turn === null) {
    view.cancelPlayedMs = player.playedMs();
    player.stop();
  } else {
    view.cancelPlayedMs = view.turn.cancel(); // the sink's played ms; stops the sink; either route's cancel
  }
  renderMetrics(view);
}

/**
 * New conversation: the agent forgets the turns so far (the gateway's newConversation, or a fresh session id on the
 * direct route); the page clears them. Send waits for the gateway's answer, so the next turn cannot reach the old
 * conversation. Not offered while a turn runs (a running turn would keep its own conversation anyway).
 * @param {Awaited<ReturnType<typeof loadConfig>>} config
 */
async function startOver(config) {
  showNotice(null);
  ui.send.disabled = true;
  ui.newConversation.disabled = true;
  try {
    if (route() === "direct") direct?.newConversation();
    else await ensureClient(config).newConversation();
    player.stop();
    turn = null;
    ui.turns.replaceChildren();
    ui.empty.hidden = false;
    conversations += 1;
  } catch (err) {
    showNotice(err instanceof Error ? err.message : String(err));
  } finally {
    setRunning(false);
    ui.prompt.focus();
  }
}

/** Mobile browsers keep audio locked until a gesture: resume the context and play silence inside the first tap. */
function unlockAudio() {
  if (audioUnlocked && player.context?.state === "running") return;
  try {
    player.unlock();
    audioUnlocked = true;
  } catch (err) {
    console.warn("relay: audio could not be unlocked:", err);
  }
}

/** New conversations started from this page (test hook). */
let conversations = 0;

/** Page Lifecycle events seen (test hook: a frozen page really was frozen). */
const lifecycle = { freeze: 0, resume: 0, hidden: 0, shown: 0 };

/** The page is back (shown, resumed after a freeze, online again): reconnect and resume now, not after backoff. */
function onPageBack() {
  if (document.visibilityState === "visible") client?.wake();
}

async function main() {
  const config = await loadConfig();
  const subject = tokenSubject(config.token);
  ui.who.textContent = config.token ? `Signed in as ${subject ?? "dev user"} (dev token)` : "No token";
  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    try {
      startTurn(config);
    } catch (err) {
      setRunning(false);
      showNotice(err instanceof Error ? err.message : String(err));
    }
  });
  ui.prompt.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (!ui.send.disabled) ui.form.requestSubmit();
    }
  });
  ui.stop.addEventListener("click", stopTurn);
  ui.newConversation.addEventListener("click", () => void startOver(config));
  for (const type of ["pointerdown", "touchend", "keydown"]) {
    document.addEventListener(type, unlockAudio, { capture: true, passive: true });
  }
  document.addEventListener("visibilitychange", () => {
    lifecycle[document.visibilityState === "visible" ? "shown" : "hidden"] += 1;
    onPageBack();
  });
  document.addEventListener("freeze", () => (lifecycle.freeze += 1));
  document.addEventListener("resume", () => {
    lifecycle.resume += 1; // Page Lifecycle: unfrozen
    onPageBack();
  });
  window.addEventListener("pageshow", onPageBack);
  window.addEventListener("online", onPageBack);
  window.addEventListener("offline", () => client?.networkLost());
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("sw.js").catch((err) => console.warn("relay: no offline shell:", err));
  }
  if (config.gatewayUrl && config.token) ensureClient(config).connect();
  ensureDirect(config); // chooses its Opus decoder now, so the first direct turn can ask for Opus
  return config;
}

const ready = main();
Object.assign(window, {
  relayPlayer: player,
  relayApp: {
    ready,
    metrics: () => turn,
    audio: () => ({ unlocked: audioUnlocked, state: player.context?.state ?? "none" }),
    wakeLock,
    lifecycle,
    conversations: () => conversations,
  },
});
