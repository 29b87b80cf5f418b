// The page: wires the form, the transports (gateway WebSocket or the agent's SSE directly), the player and
// the views. Protocol logic lives in client_session.js / agent_direct.js, audio in player.js.
//
// Captions: with the "captions" box ticked the turn asks for word timings, and each word of the reply is
// highlighted when the player's clock (the audio schedule, not the wall clock) reaches its start_s.
//
// Test hooks (used by tests/web/test_web_*.py): window.relayApp (ready promise, config, metrics: the Turn,
// captions included),
// window.relayPlayer (the PcmPlayer: schedule record and samples), window.relayClient (the GatewayClient:
// dropConnection(), sent messages, the ClientSession).

import { AgentDirectClient } from "./agent_direct.js";
import { CaptionTrack, alignToReply } from "./captions.js";
import { ClientSession, newTurnId } from "./client_session.js";
import { GatewayClient } from "./gateway.js";
import { firstAudibleIndex } from "./pcm.js";
import { PcmPlayer } from "./player.js";
import { WordStream } from "./transcript.js";

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const ui = {
  form: /** @type {HTMLFormElement} */ ($("composer")),
  prompt: /** @type {HTMLTextAreaElement} */ ($("prompt")),
  mode: /** @type {HTMLSelectElement} */ ($("mode")),
  captions: /** @type {HTMLInputElement} */ ($("captions")),
  voice: /** @type {HTMLInputElement} */ ($("voice")),
  send: /** @type {HTMLButtonElement} */ ($("send")),
  stop: /** @type {HTMLButtonElement} */ ($("stop")),
  who: $("who"),
  connection: $("connection"),
  connectionText: $("connection-text"),
  ttfb: $("ttfb"),
  ttfa: $("ttfa"),
  audioSeconds: $("audio-seconds"),
  turnStatus: $("turn-status"),
  reply: $("reply"),
  notice: $("notice"),
};

const STATE_LABELS = {
  idle: "Idle",
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  closed: "Disconnected",
};

/**
 * The page's configuration: /config.json as the local stack serves it ({gateway_url, token, agent_url}),
 * overridable by query parameters (?gateway=...&token=...).
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
    agentEndpoint: params.get("agent") ?? (config.agent_url ? `${config.agent_url}/invocations` : "agent/invocations"),
  };
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
    /** the timed word highlighted now (-1: none yet) */
    this.current = -1;
    /** every rendered reply word up to this index has been spoken */
    this.spokenThrough = -1;
    /** @type {{index: number, at: number}[]} each timed word as it got highlighted, with the player's clock then
     * (seconds of the turn's audio played): the test hook that shows captions following playback */
    this.log = [];
  }
}

class Turn {
  /**
   * The turn on screen; metrics in ms since Send (performance.now clock).
   * @param {string} id
   * @param {boolean} timings whether the turn asked for word timings (captions)
   */
  constructor(id, timings = false) {
    this.id = id;
    this.sentAt = performance.now();
    /** @type {number | null} */
    this.firstByteMs = null;
    /** @type {number | null} */
    this.firstAudibleMs = null;
    this.samples = 0;
    /** @type {string} */
    this.status = "sending";
    this.words = new WordStream();
    /** @type {Captions | null} */
    this.captions = timings ? new Captions() : null;
    /** @type {number | null} the played_ms the Stop button's cancel carried */
    this.cancelPlayedMs = null;
  }
}

const player = new PcmPlayer();
const session = new ClientSession();
/** @type {Turn | null} */
let turn = null;
/** @type {GatewayClient | null} */
let gateway = null;
/** @type {AgentDirectClient | null} */
let direct = null;

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

/** @param {string | null} text */
function showNotice(text) {
  ui.notice.hidden = text === null;
  ui.notice.textContent = text ?? "";
}

/** @param {number | null} ms */
const fmtMs = (ms) => (ms === null ? "–" : `${Math.round(ms)} ms`);

function renderMetrics() {
  if (turn === null) return;
  ui.ttfb.textContent = fmtMs(turn.firstByteMs);
  ui.ttfa.textContent = fmtMs(turn.firstAudibleMs);
  ui.audioSeconds.textContent = `${(turn.samples / player.sampleRate).toFixed(2)} s`;
  ui.turnStatus.textContent = turn.status;
  ui.turnStatus.dataset.status = turn.status;
}

/** @param {string} delta */
function appendText(delta) {
  if (turn === null) return;
  for (const op of turn.words.push(delta)) {
    if (op.kind === "space") {
      ui.reply.append(op.text);
    } else if (op.extend) {
      const last = ui.reply.querySelector(`.word[data-index="${op.index}"]`);
      if (last !== null) last.textContent += op.text;
    } else {
      const span = document.createElement("span");
      span.className = "word";
      span.dataset.index = String(op.index);
      span.dataset.char = String(op.charOffset);
      span.textContent = op.text;
      ui.reply.append(span);
    }
  }
}

/** @param {Int16Array} samples */
function playAudio(samples) {
  if (turn === null) return;
  const now = performance.now();
  if (turn.firstByteMs === null) turn.firstByteMs = now - turn.sentAt;
  const start = player.enqueue(samples);
  if (turn.firstAudibleMs === null && start !== null && player.context !== null) {
    const index = firstAudibleIndex(samples);
    if (index >= 0) {
      // When the sample will be heard: its place in the schedule, in the page's clock.
      const playsIn = start + index / player.sampleRate - player.context.currentTime;
      turn.firstAudibleMs = now + Math.max(0, playsIn) * 1000 - turn.sentAt;
    }
  }
  turn.samples += samples.length;
}

/** @param {import("./client_session.js").WordTiming[]} words */
function addCaptions(words) {
  if (turn === null || turn.captions === null) return;
  const c = turn.captions;
  c.track.add(words);
  const aligned = alignToReply(words, turn.words.words(), c.next);
  c.spans.push(...aligned.spans);
  c.next = aligned.next;
  followPlayback();
}

/** @param {number} index a rendered reply word */
const replyWord = (index) => ui.reply.querySelector(`.word[data-index="${index}"]`);

/** Highlight the word the player's clock is in (or last passed), and mark every word before it spoken. */
function showCaptionAt(/** @type {Captions} */ c, /** @type {number} */ seconds) {
  const index = c.track.highlightAt(seconds);
  if (index === c.current) return;
  if (c.current >= 0) {
    const [first, last] = c.spans[c.current];
    for (let j = first; j <= last; j++) replyWord(j)?.classList.remove("current");
  }
  c.current = index;
  if (index < 0) return;
  c.log.push({ index, at: seconds });
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
    const c = turn?.captions ?? null;
    if (turn === null || c === null) {
      following = false;
      return;
    }
    showCaptionAt(c, player.playedSeconds());
    const ended = !["sending", "streaming", "cancelling"].includes(turn.status);
    if (ended && (player.stopped || !player.playing)) {
      showCaptionAt(c, player.playedSeconds());
      following = false;
      return;
    }
    requestAnimationFrame(step);
  };
  requestAnimationFrame(step);
}

/**
 * Send while no turn runs; Stop while a turn runs or its audio still plays (a reply is spoken slower than it is
 * made: stopping it after its end still tells the agent what the listener heard).
 * @param {boolean} running
 */
function setRunning(running) {
  ui.send.disabled = running;
  ui.stop.disabled = !running && !player.playing;
  if (!running && player.playing) disableStopWhenSilent();
}

/** Disable Stop once the ended turn's audio has played out (unless a new turn runs by then). */
function disableStopWhenSilent() {
  const step = () => {
    if (!ui.send.disabled && !player.playing) ui.stop.disabled = true;
    else if (!ui.send.disabled) requestAnimationFrame(step);
  };
  requestAnimationFrame(step);
}

/** @param {import("./client_session.js").ClientEvent} event */
function onEvent(event) {
  if (turn === null) return;
  if ("turnId" in event && event.turnId !== null && event.turnId !== turn.id) return; // an older turn
  switch (event.type) {
    case "accepted":
    case "turn_started":
      if (turn.status === "sending") turn.status = "streaming";
      break;
    case "text_received":
      appendText(event.text);
      break;
    case "audio_received":
      playAudio(event.samples);
      break;
    case "words_received":
      addCaptions(event.words);
      break;
    case "turn_ended":
      turn.status = event.outcome;
      if (event.outcome !== "completed") player.stop();
      setRunning(false);
      if (event.code !== null) showNotice(`${event.message} (${event.code})`);
      break;
    case "rejected":
      showNotice(`${event.message} (${event.code})`);
      break;
    case "protocol_error":
      console.warn("relay:", event.message);
      break;
    default:
      break;
  }
  renderMetrics();
}

/** @param {Awaited<ReturnType<typeof loadConfig>>} config */
function ensureGateway(config) {
  if (gateway !== null) return gateway;
  if (!config.gatewayUrl) throw new Error("no gateway URL: serve config.json or add ?gateway=wss://...");
  gateway = new GatewayClient({
    url: config.gatewayUrl,
    token: config.token,
    session,
    onEvent,
    onState: showConnection,
  });
  Object.assign(window, { relayClient: gateway });
  gateway.connect();
  return gateway;
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
  player.ensureContext(); // inside the click: the browser lets the context play
  player.begin();
  ui.reply.replaceChildren();
  const options = {
    prompt,
    mode: ui.mode.value,
    voice: ui.voice.value.trim() || null,
    turnId: newTurnId(),
    timings: ui.captions.checked,
  };
  turn = new Turn(options.turnId, options.timings);
  setRunning(true);
  renderMetrics();
  if (route() === "direct") {
    direct = direct ?? new AgentDirectClient({ endpoint: config.agentEndpoint, onEvent });
    direct.run(options).finally(() => setRunning(false));
  } else {
    ensureGateway(config).send(session.sendMessage(options));
  }
}

function stopTurn() {
  // What the listener heard, by the player's schedule: the agent keeps only those words in its memory, whether
  // the turn still runs (it is cancelled) or already ended while its audio played on (a late barge-in).
  const playedMs = Math.round(player.playedSeconds() * 1000);
  player.stop();
  if (turn === null) return;
  const running = ["sending", "streaming"].includes(turn.status);
  if (running) turn.status = "cancelling";
  else ui.stop.disabled = true;
  turn.cancelPlayedMs = playedMs;
  renderMetrics();
  if (route() === "direct") {
    direct?.cancel(playedMs);
  } else if (session.turns.has(turn.id)) {
    gateway?.send(session.cancel(turn.id, playedMs));
  }
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
  ui.stop.addEventListener("click", stopTurn);
  if (config.gatewayUrl && config.token) ensureGateway(config);
  return config;
}

const ready = main();
Object.assign(window, {
  relayPlayer: player,
  relaySession: session,
  relayApp: { ready, metrics: () => turn },
});
