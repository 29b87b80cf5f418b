// The client side of the gateway protocol (docs/client-protocol.md), sans I/O: strings in, events out.
// The JS twin of relay_core.client.session.ClientSession (same turn phases, outcomes and events, in
// snake_case), checked against the same recorded cases (tests/web/fixtures/client_session_cases.json,
// generated from relay_core; tests/web/test_web_fixtures.py runs the Python session over them too).
//
// Guarantees, per turn: text and audio come out exactly once and in seq order whatever the gateway repeats
// (a repeat gives duplicate_ignored); a message after a missing one is not applied (one gap_detected per
// gap) and resume() asks for everything after the last message applied, so the gap fills with nothing lost
// or repeated; audio comes out as whole 16-bit samples. Unlike the Python session, malformed input never
// throws: it gives a protocol_error event and changes nothing (one bad message must not end a page).

import { langField } from "./languages.js";
import { AUDIO_CHOICES, OPUS_FORMAT, OpusWireError, splitPackets } from "./opus.js";
import { PcmTimeline, base64ToBytes, pcmSampleCount } from "./pcm.js";

/**
 * @typedef {{type: "accepted", turnId: string}
 *   | {type: "turn_started", turnId: string, mode: string, model: string}
 *   | {type: "text_received", turnId: string, seq: number, text: string}
 *   | {type: "audio_started", turnId: string, voice: string, format: string, sampleRate: number, channels: number,
 *      preSkip: number, frameSamples: number}
 *   | {type: "audio_received", turnId: string, seq: number, sampleOffset: number, samples: Int16Array}
 *   | {type: "opus_received", turnId: string, seq: number, sampleOffset: number, sampleCount: number, packets: Uint8Array[]}
 *   | {type: "words_received", turnId: string, seq: number, words: WordTiming[], index: number | null}
 *   | {type: "audio_ended", turnId: string, totalSamples: number, durationS: number}
 *   | {type: "speech_waiting_received", turnId: string, seq: number, position: number}
 *   | {type: "turn_ended", turnId: string, outcome: string, code: string | null, message: string | null}
 *   | {type: "rejected", code: string, message: string, turnId: string | null}
 *   | {type: "gap_detected", turnId: string, expectedSeq: number, receivedSeq: number}
 *   | {type: "duplicate_ignored", turnId: string, seq: number}
 *   | {type: "new_conversation_started"}
 *   | {type: "protocol_error", message: string}} ClientEvent
 */

/** @typedef {Extract<ClientEvent, {type: "opus_received"}>} OpusReceived */

/**
 * One written word and the span of its speech, in seconds on the turn's audio timeline
 * (relay_core.word_timings.WordTiming). `final: false`: an estimate from the model's durations, sent so that the
 * word is timed before its audio plays; a later `word_timings` message replaces it (see `applyWords`).
 * @typedef {{word: string, start_s: number, end_s: number, final?: boolean}} WordTiming
 */

/**
 * relay_core.client.session.STALL_RESUME_S in ms: a client that hears nothing for this long about an accepted,
 * unfinished turn, on a socket still open, sends that turn's `resume` on the same connection
 * (tests/web/fixtures/constants.json, written from relay_core, keeps the two equal).
 */
export const STALL_RESUME_MS = 10_000;

/** relay_core.word_timings.MAX_WORD_INDEX: the largest `index` a word_timings message may carry. */
export const MAX_WORD_INDEX = 10_000_000;

/** relay_core.word_timings.MAX_PLAYED_MS: the largest `played_ms` a cancel may carry (a day). */
export const MAX_PLAYED_MS = 24 * 60 * 60 * 1000;

/** relay_core.limits.MAX_PROMPT_CHARS: the most characters (code points) a prompt may have. */
export const MAX_PROMPT_CHARS = 20_000;

/**
 * relay_core.limits.APIGW_FRAME_BYTES: the most UTF-8 bytes of one message to the gateway. API Gateway closes the
 * connection (1009) on a frame over 32 KB, and WebSockets (browsers, Node, React Native) send a message as one frame.
 */
export const MAX_SEND_BYTES = 32 * 1024;

/**
 * A message over the protocol's limits (relay_core.errors.LimitExceededError): a prompt over MAX_PROMPT_CHARS or
 * a sendMessage over the session's maxSendBytes. `code` is the protocol's error code, "limit_exceeded".
 */
export class LimitExceededError extends RangeError {
  /** relay_core.client.messages.ClientErrorCode.LIMIT_EXCEEDED */
  static CODE = "limit_exceeded";

  /** @param {string} message what is over which limit, and what to do */
  constructor(message) {
    super(message);
    this.name = "LimitExceededError";
    this.code = LimitExceededError.CODE;
  }
}

/** relay_core.client.session.TurnPhase */
export const TurnPhase = Object.freeze({ SENT: "sent", ACTIVE: "active", ENDED: "ended" });

/** relay_core.client.session.TurnOutcome */
export const TurnOutcome = Object.freeze({
  COMPLETED: "completed",
  CANCELLED: "cancelled",
  FAILED: "failed",
  REJECTED: "rejected",
  EXPIRED: "expired",
});

/** Rejection codes that mean a resumed turn is lost (relay_core: resume_expired, unknown_turn). */
const LOST_CODES = new Set(["resume_expired", "unknown_turn"]);
const TURN_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
const URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * A fresh turn id like relay_core.client.messages.new_turn_id: "t-" + 22 URL-safe characters. Uses
 * crypto.getRandomValues where the platform has it (browsers, Node, React Native with a polyfill), Math.random
 * otherwise: a turn id must be unique among the user's turns, not secret.
 */
export function newTurnId() {
  const bytes = new Uint8Array(22);
  /** @type {{getRandomValues?: (a: Uint8Array) => Uint8Array} | undefined} */
  const crypto = /** @type {any} */ (globalThis).crypto;
  if (crypto?.getRandomValues) crypto.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return "t-" + Array.from(bytes, (b) => URL_SAFE[b & 63]).join("");
}

/** What the client holds of one turn (relay_core.client.session.ClientTurn). */
export class ClientTurn {
  /** @param {string} turnId */
  constructor(turnId) {
    this.turnId = turnId;
    /** @type {string} one of TurnPhase */
    this.phase = TurnPhase.SENT;
    /** The last seq applied; every message up to it was applied exactly once (-1: none yet). */
    this.lastSeq = -1;
    /** @type {string | null} */
    this.outcome = null;
    /** @type {string | null} */
    this.errorCode = null;
    this.sampleRate = 24000;
    /** @type {string} audio_stream_start's format: "pcm_s16le" or "opus" */
    this.format = "pcm_s16le";
    /** PCM-timeline samples of the Opus chunks applied so far */
    this._opusSamples = 0;
    this.gapReported = false;
    this.resumePending = false;
    this.gaps = 0;
    this.duplicates = 0;
    /** @type {WordTiming[]} every word timing applied so far (only when the turn asked for timings) */
    this.words = [];
    this._audio = new PcmTimeline();
  }

  /** Samples of audio applied so far (on the PCM timeline, whatever the format). */
  get samples() {
    return this.format === OPUS_FORMAT ? this._opusSamples : this._audio.samples;
  }

  get finished() {
    return this.phase === TurnPhase.ENDED;
  }
}

export class ClientSession {
  /**
   * `maxSendBytes`: the largest message sendMessage() builds (default MAX_SEND_BYTES, one gateway frame); raise
   * it only with a WebSocket that fragments messages into frames of at most 32 KB (relay_core's max_send_bytes).
   * @param {{maxSendBytes?: number}} [options]
   */
  constructor({ maxSendBytes = MAX_SEND_BYTES } = {}) {
    this.maxSendBytes = maxSendBytes;
    /** @type {Map<string, ClientTurn>} every turn, oldest first */
    this.turns = new Map();
    /** @type {string | null} the turn this page started last */
    this.currentTurnId = null;
    /**
     * A `newConversation` went out and its `conversation_started` has not come back: hold the next sendMessage
     * until it does (it could otherwise reach the old conversation); after a reconnect, send newConversation()
     * again (a second one is harmless). relay_core's ClientSession.conversation_pending.
     */
    this.conversationPending = false;
  }

  /** The turn this page started last, or null. */
  get current() {
    return this.currentTurnId === null ? null : (this.turns.get(this.currentTurnId) ?? null);
  }

  /** The unfinished turns (resume these after a reconnect). */
  get unfinishedTurns() {
    return [...this.turns.values()].filter((t) => !t.finished);
  }

  /**
   * The `sendMessage` for a new turn. The client picks the turn id so the turn can be resumed even if the
   * connection drops before `turn_accepted`. Throws for a turn id already used in this session.
   * `timings: true` asks for the reply's word timings (`words_received` events); absent or false changes nothing.
   * `lang`: the language to read the reply in, a code or a voice letter (see languages.js; sent as its code);
   * absent, null or "": the voice's own. `audio`: "pcm" (the default, nothing on the wire) or "opus" (the speech
   * comes as Opus packets: opus_received events; decode them with an OpusStream). Throws a TypeError for a language Kokoro does not speak, and a
   * LimitExceededError for a prompt over MAX_PROMPT_CHARS or a message over `maxSendBytes`, recording nothing.
   * @param {{prompt: string, voice?: string | null, speed?: number, lang?: string | null, mode?: string,
   *          turnId?: string, timings?: boolean, audio?: string | null}} turn
   * @returns {string}
   */
  sendMessage(turn) {
    const turnId = turn.turnId ?? newTurnId();
    if (this.turns.has(turnId)) throw new Error(`turn id ${turnId} is already used in this session: use a new one per turn`);
    if (!TURN_ID_PATTERN.test(turnId)) throw new Error("a turn id is 1 to 64 characters of A-Z a-z 0-9 - _ . :");
    const lang = langField(turn.lang);
    const audio = turn.audio ?? "pcm";
    if (!AUDIO_CHOICES.includes(audio)) throw new TypeError(`audio must be one of ${AUDIO_CHOICES.join(", ")}, not ${JSON.stringify(audio)}`);
    const chars = codePoints(turn.prompt);
    if (chars > MAX_PROMPT_CHARS) throw new LimitExceededError(`'prompt' has ${chars} characters; the limit is ${MAX_PROMPT_CHARS}: shorten the prompt`);
    /** @type {Record<string, unknown>} */
    const message = { action: "sendMessage", prompt: turn.prompt };
    if (turn.voice) message.voice = turn.voice;
    message.speed = turn.speed ?? 1.0;
    if (lang !== null) message.lang = lang;
    message.mode = turn.mode ?? "bidi";
    message.turn_id = turnId;
    if (turn.timings) message.timings = true;
    if (audio !== "pcm") message.audio = audio;
    const data = JSON.stringify(message);
    const size = utf8Length(data);
    if (size > this.maxSendBytes) {
      throw new LimitExceededError(`this sendMessage is ${size} bytes; one WebSocket frame to the gateway holds ${this.maxSendBytes}: shorten the prompt`);
    }
    this.turns.set(turnId, new ClientTurn(turnId));
    this.currentTurnId = turnId;
    return data;
  }

  /**
   * End a turn whose sendMessage the gateway closed the connection over (close code 1009, message too big): the
   * gateway never ran it, so it is not resumed or sent again. The turn_ended event (outcome rejected, code
   * limit_exceeded), or nothing for a turn that is unknown or already ended.
   * @param {string} turnId
   * @param {number} sizeBytes the sendMessage's size in UTF-8 bytes
   * @returns {ClientEvent[]}
   */
  closedTooBig(turnId, sizeBytes) {
    const turn = this.turns.get(turnId);
    if (turn === undefined || turn.finished) return [];
    const message = `the gateway closed the connection (1009, message too big) over this turn's ${sizeBytes}-byte sendMessage; API Gateway takes at most ${MAX_SEND_BYTES} bytes in one WebSocket frame: shorten the prompt`;
    return [end(turn, TurnOutcome.REJECTED, LimitExceededError.CODE, message)];
  }

  /**
   * The `cancel` to send (turnId null: the user's running turn). The turn ends when its terminal message
   * (agent_end with status cancelled) arrives. `playedMs`: how many ms of the turn's audio the listener heard
   * (the agent then remembers only the words heard); null: not said.
   * @param {string | null} [turnId]
   * @param {number | null} [playedMs]
   */
  cancel(turnId = null, playedMs = null) {
    /** @type {Record<string, unknown>} */
    const message = { action: "cancel" };
    if (turnId !== null) message.turn_id = turnId;
    if (playedMs !== null) message.played_ms = playedMsField(playedMs);
    return JSON.stringify(message);
  }

  /**
   * The `newConversation` to send: the user's next turns start a conversation the agent has no history of.
   * Send the next sendMessage once the `new_conversation_started` event came (`conversationPending` is false again).
   * @returns {string}
   */
  newConversation() {
    this.conversationPending = true;
    return JSON.stringify({ action: "newConversation" });
  }

  /**
   * The `resume` for an unfinished turn: everything after its last applied seq. Throws for a finished or
   * unknown turn.
   * @param {string} turnId
   */
  resume(turnId) {
    const turn = this.turns.get(turnId);
    if (turn === undefined) throw new Error(`no turn ${turnId} in this session: resume only turns you started or received`);
    if (turn.finished) throw new Error(`turn ${turnId} already ended (${turn.outcome}): there is nothing to resume`);
    turn.resumePending = true;
    return JSON.stringify({ action: "resume", turn_id: turnId, after_seq: turn.lastSeq });
  }

  /** A `resume` for every unfinished turn: send them on a new connection after a reconnect. */
  resumeAll() {
    return this.unfinishedTurns.map((t) => this.resume(t.turnId));
  }

  /**
   * Apply one gateway message; the events it causes, in order.
   * @param {string} data
   * @returns {ClientEvent[]}
   */
  receive(data) {
    /** @type {any} */
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return [protocolError("the gateway sent a message that is not JSON")];
    }
    if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
      return [protocolError("the gateway sent a message that is not a JSON object")];
    }
    if (msg.type === "turn_accepted") {
      if (!validTurnId(msg.turn_id)) return [protocolError("turn_accepted without a valid turn_id")];
      const turn = this._turnFor(msg.turn_id);
      if (turn.phase === TurnPhase.SENT) turn.phase = TurnPhase.ACTIVE;
      turn.resumePending = false; // a resume is answered with turn_accepted before its replay
      return [{ type: "accepted", turnId: msg.turn_id }];
    }
    if (msg.type === "conversation_started") {
      this.conversationPending = false;
      return [{ type: "new_conversation_started" }];
    }
    if (msg.type === "error" && !("seq" in msg)) return this._onRejected(msg);
    if (!validTurnId(msg.turn_id) || !Number.isInteger(msg.seq) || msg.seq < 0) {
      return [protocolError(`gateway message of type ${String(msg.type).slice(0, 40)} lacks a valid turn_id or seq`)];
    }
    return this._onTurnMessage(msg);
  }

  /** @param {string} turnId */
  _turnFor(turnId) {
    let turn = this.turns.get(turnId);
    if (turn === undefined) {
      // A turn started elsewhere (e.g. before a reload): follow it from here.
      turn = new ClientTurn(turnId);
      this.turns.set(turnId, turn);
    }
    return turn;
  }

  /**
   * @param {any} msg an error without seq
   * @returns {ClientEvent[]}
   */
  _onRejected(msg) {
    const turnId = typeof msg.turn_id === "string" && msg.turn_id !== "" ? msg.turn_id : null;
    const code = String(msg.code ?? "internal_error");
    const message = String(msg.message ?? "");
    /** @type {ClientEvent[]} */
    const events = [{ type: "rejected", code, message, turnId }];
    const turn = turnId === null ? undefined : this.turns.get(turnId);
    if (turn === undefined || turn.finished) return events;
    if (turn.resumePending && LOST_CODES.has(code)) {
      events.push(end(turn, TurnOutcome.EXPIRED, code, message));
    } else if (turn.phase === TurnPhase.SENT && !turn.resumePending && !LOST_CODES.has(code)) {
      // unknown_turn / resume_expired answer a resume, never the turn's own sendMessage: not its rejection
      events.push(end(turn, TurnOutcome.REJECTED, code, message));
    }
    return events;
  }

  /**
   * @param {any} msg a turn message (has turn_id and seq)
   * @returns {ClientEvent[]}
   */
  _onTurnMessage(msg) {
    const turn = this._turnFor(msg.turn_id);
    if (msg.seq <= turn.lastSeq) {
      turn.duplicates += 1;
      return [{ type: "duplicate_ignored", turnId: turn.turnId, seq: msg.seq }];
    }
    if (turn.finished) {
      return [protocolError(`message ${msg.seq} of turn ${turn.turnId} came after its terminal message ${turn.lastSeq}`)];
    }
    if (msg.seq > turn.lastSeq + 1) {
      if (turn.gapReported) return [];
      turn.gapReported = true;
      turn.gaps += 1;
      return [{ type: "gap_detected", turnId: turn.turnId, expectedSeq: turn.lastSeq + 1, receivedSeq: msg.seq }];
    }
    const event = this._apply(turn, msg);
    if (event.type === "protocol_error") return [event];
    turn.lastSeq = msg.seq;
    turn.gapReported = false;
    turn.resumePending = false;
    if (turn.phase === TurnPhase.SENT) turn.phase = TurnPhase.ACTIVE;
    return [event];
  }

  /**
   * The event for the next message of a turn; a protocol_error (and no change) if it is inconsistent.
   * @param {ClientTurn} turn
   * @param {any} msg
   * @returns {ClientEvent}
   */
  _apply(turn, msg) {
    const turnId = turn.turnId;
    switch (msg.type) {
      case "text_delta":
        if (typeof msg.text !== "string") return protocolError(`text_delta ${msg.seq} has no text`);
        return { type: "text_received", turnId, seq: msg.seq, text: msg.text };
      case "audio_chunk":
        return this._applyAudio(turn, msg);
      case "word_timings": {
        const words = parseWords(msg.words);
        if (words === null) return protocolError(`word_timings ${msg.seq} has malformed words`);
        const index = parseWordIndex(msg.index);
        if (index === undefined) return protocolError(`word_timings ${msg.seq} has a malformed index`);
        applyWords(turn.words, words, index);
        return { type: "words_received", turnId, seq: msg.seq, words, index };
      }
      case "agent_start":
        return { type: "turn_started", turnId, mode: String(msg.mode ?? "bidi"), model: String(msg.model ?? "") };
      case "audio_stream_start":
        turn.sampleRate = Number(msg.sample_rate ?? 24000);
        turn.format = String(msg.format ?? "pcm_s16le");
        if (turn.format === OPUS_FORMAT && !(Number.isInteger(msg.pre_skip) && msg.pre_skip >= 0)) {
          return protocolError(`audio_stream_start ${msg.seq} is Opus without a valid pre_skip`);
        }
        return {
          type: "audio_started",
          turnId,
          voice: String(msg.voice ?? ""),
          format: String(msg.format ?? "pcm_s16le"),
          sampleRate: turn.sampleRate,
          channels: Number(msg.channels ?? 1),
          preSkip: Number(msg.pre_skip ?? 0),
          frameSamples: Number(msg.frame_samples ?? 0),
        };
      case "speech_waiting":
        // a status, not an error: the speech service is busy and the turn's speech waits in line ("voice starting…")
        return { type: "speech_waiting_received", turnId, seq: msg.seq, position: Number(msg.position ?? 1) };
      case "audio_stream_end":
        return { type: "audio_ended", turnId, totalSamples: Number(msg.total_samples ?? 0), durationS: Number(msg.duration_s ?? 0) };
      case "agent_end":
        return end(turn, msg.status === TurnOutcome.CANCELLED ? TurnOutcome.CANCELLED : TurnOutcome.COMPLETED, null, null);
      case "error":
        return end(turn, TurnOutcome.FAILED, String(msg.code ?? "internal_error"), String(msg.message ?? ""));
      default:
        return protocolError(`unknown gateway message type ${String(msg.type).slice(0, 40)}`);
    }
  }

  /**
   * @param {ClientTurn} turn
   * @param {any} msg
   * @returns {ClientEvent}
   */
  _applyAudio(turn, msg) {
    let bytes;
    try {
      bytes = base64ToBytes(String(msg.data ?? ""));
    } catch {
      return protocolError(`audio_chunk ${msg.seq}: data is not base64`);
    }
    if (turn.format === OPUS_FORMAT) return this._applyOpus(turn, msg, bytes);
    if (pcmSampleCount(bytes.length) < 0) return protocolError(`audio_chunk ${msg.seq} is not whole 16-bit samples (${bytes.length} bytes)`);
    if (msg.sample_offset !== turn.samples) {
      return protocolError(`audio_chunk ${msg.seq} starts at sample ${msg.sample_offset}, expected ${turn.samples}`);
    }
    const { sampleOffset, samples } = turn._audio.append(bytes);
    return { type: "audio_received", turnId: turn.turnId, seq: msg.seq, sampleOffset, samples };
  }

  /**
   * An Opus chunk: its packets and where its PCM goes (decoding is the client's: it is asynchronous on most
   * platforms). Its sample_offset must continue the PCM timeline; `samples` is what it adds to it.
   * @param {ClientTurn} turn
   * @param {any} msg
   * @param {Uint8Array} bytes
   * @returns {ClientEvent}
   */
  _applyOpus(turn, msg, bytes) {
    const event = opusChunkEvent(turn.turnId, msg, bytes, turn._opusSamples);
    if (event.type === "opus_received") turn._opusSamples += event.sampleCount;
    return event;
  }
}

/**
 * The opus_received event of an Opus audio_chunk (the gateway's, or the agent's own on its SSE stream: the same
 * fields) whose `data` decoded to `bytes`: its packets and where its PCM goes. Its sample_offset must be
 * `expectedOffset` (the PCM-timeline samples of the turn's Opus chunks before it); a protocol_error otherwise.
 * @param {string} turnId
 * @param {any} msg
 * @param {Uint8Array} bytes
 * @param {number} expectedOffset
 * @returns {ClientEvent}
 */
export function opusChunkEvent(turnId, msg, bytes, expectedOffset) {
  let packets;
  try {
    packets = splitPackets(bytes, msg.packet_bytes);
  } catch (err) {
    if (err instanceof OpusWireError) return protocolError(`audio_chunk ${msg.seq}: ${err.message}`);
    throw err;
  }
  if (!Number.isInteger(msg.samples) || msg.samples < 0) return protocolError(`audio_chunk ${msg.seq} (Opus) lacks a valid samples count`);
  if (msg.sample_offset !== expectedOffset) {
    return protocolError(`audio_chunk ${msg.seq} starts at sample ${msg.sample_offset}, expected ${expectedOffset}`);
  }
  return { type: "opus_received", turnId, seq: msg.seq, sampleOffset: msg.sample_offset, sampleCount: msg.samples, packets };
}

/**
 * @param {ClientTurn} turn
 * @param {string} outcome
 * @param {string | null} code
 * @param {string | null} message
 * @returns {ClientEvent}
 */
function end(turn, outcome, code, message) {
  turn.phase = TurnPhase.ENDED;
  turn.outcome = outcome;
  turn.errorCode = code;
  turn.resumePending = false;
  return { type: "turn_ended", turnId: turn.turnId, outcome, code, message };
}

/**
 * A cancel's `played_ms`: a whole number of ms within 0..MAX_PLAYED_MS (relay_core.word_timings.parse_played_ms).
 * @param {number} playedMs
 */
export function playedMsField(playedMs) {
  if (!Number.isFinite(playedMs)) throw new RangeError("played_ms must be a finite number of milliseconds");
  return Math.min(MAX_PLAYED_MS, Math.max(0, Math.round(playedMs)));
}

/**
 * The `words` of a word_timings message, or null if any entry is malformed (relay_core.word_timings checks).
 * @param {unknown} value
 * @returns {WordTiming[] | null}
 */
export function parseWords(value) {
  if (!Array.isArray(value)) return null;
  /** @type {WordTiming[]} */
  const words = [];
  let lastEnd = 0;
  for (const item of value) {
    if (item === null || typeof item !== "object") return null;
    const { word, start_s: start, end_s: end } = /** @type {Record<string, unknown>} */ (item);
    if (typeof word !== "string" || word === "" || typeof start !== "number" || typeof end !== "number") return null;
    if (!(Number.isFinite(start) && Number.isFinite(end) && 0 <= start && start <= end && start >= lastEnd)) return null;
    const final = /** @type {Record<string, unknown>} */ (item).final;
    if (final !== undefined && typeof final !== "boolean") return null;
    words.push(final === false ? { word, start_s: start, end_s: end, final } : { word, start_s: start, end_s: end });
    lastEnd = end;
  }
  return words;
}

/**
 * The `index` of a word_timings message: null when absent (the words are appended), a whole number from 0 to
 * relay_core.word_timings.MAX_WORD_INDEX, or undefined when malformed.
 * @param {unknown} value
 * @returns {number | null | undefined}
 */
export function parseWordIndex(value) {
  if (value === undefined || value === null) return null;
  return Number.isInteger(value) && 0 <= Number(value) && Number(value) <= MAX_WORD_INDEX ? Number(value) : undefined;
}

/**
 * Apply one word_timings message to the words held (relay_core.word_timings.apply_word_timings): from `index` on
 * they are replaced by `words` (estimates made final, or better estimates); with `index` null they are appended.
 * @param {WordTiming[]} held
 * @param {WordTiming[]} words
 * @param {number | null} index
 */
export function applyWords(held, words, index) {
  if (index !== null && index < held.length) held.length = index;
  held.push(...words);
}

/**
 * The UTF-8 size of a string in bytes, as the gateway counts it (a lone surrogate, which JSON.stringify escapes,
 * counts as the 3 bytes of U+FFFD).
 * @param {string} text
 */
export function utf8Length(text) {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Characters as relay_core counts them (code points, not UTF-16 units: an emoji is one).
 * @param {string} text
 */
function codePoints(text) {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** @param {unknown} value */
function validTurnId(value) {
  return typeof value === "string" && TURN_ID_PATTERN.test(value);
}

/**
 * @param {string} message
 * @returns {ClientEvent}
 */
function protocolError(message) {
  return { type: "protocol_error", message };
}
