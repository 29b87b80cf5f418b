// The client side of the gateway protocol (docs/client-protocol.md), sans I/O: strings in, events out.
// The browser twin of relay_core.client_session: the same cases are checked against recorded message
// sequences that relay_core generates (tests/web/fixtures/client_session_cases.json).
//
// Guarantees: turn messages are applied once each, in seq order (duplicates, e.g. replayed by a resume,
// are dropped; a gap is reported once and nothing after it is applied until the missing seq arrives);
// audio comes out as whole 16-bit samples whatever the message boundaries; `resumeMessage()` names the
// last seq held, so after a reconnect the gateway sends exactly what is missing.

import { PcmAssembler, base64ToBytes } from "./pcm.js";

/**
 * @typedef {{type: "turn_accepted", turnId: string}
 *   | {type: "turn_started", turnId: string}
 *   | {type: "text", text: string, seq?: number}
 *   | {type: "audio_start", sampleRate: number, voice: string}
 *   | {type: "audio", samples: Int16Array, sampleOffset?: number}
 *   | {type: "audio_end", durationS: number, totalSamples?: number}
 *   | {type: "turn_end", status: string}
 *   | {type: "turn_error", code: string, message: string}
 *   | {type: "rejected", code: string, message: string, turnId?: string}
 *   | {type: "gap", expected: number, got: number}
 *   | {type: "protocol_error", message: string}} ClientEvent
 */

/** @typedef {"idle" | "waiting" | "streaming" | "finished"} TurnState */

const TURN_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** A fresh turn id like relay_core.client_messages.new_turn_id: "t-" + 22 URL-safe characters. */
export function newTurnId() {
  const bytes = new Uint8Array(22);
  crypto.getRandomValues(bytes);
  return "t-" + Array.from(bytes, (b) => TURN_ID_ALPHABET[b & 63]).join("");
}

/** Rejection codes that end the current turn for good (nothing more of it will come). */
const TURN_ENDING_REJECTIONS = new Set(["resume_expired", "unknown_turn"]);

export class ClientSession {
  constructor() {
    /** @type {string | null} */
    this.turnId = null;
    /** @type {TurnState} */
    this.state = "idle";
    /** Last seq applied; -1 before the first. */
    this.lastSeq = -1;
    this.duplicates = 0;
    this.gaps = 0;
    this.samplesReceived = 0;
    /** @type {number | null} the seq a reported gap is waiting for */
    this._gapAt = null;
    this._pcm = new PcmAssembler();
  }

  /** Whether a turn is waiting for or receiving messages. */
  get turnActive() {
    return this.state === "waiting" || this.state === "streaming";
  }

  /**
   * Begin a turn: the `sendMessage` to send. The client picks the turn id so it can resume even if
   * `turn_accepted` was lost.
   * @param {{prompt: string, voice?: string | null, speed?: number, mode?: string, turnId?: string}} turn
   * @returns {string}
   */
  startTurn(turn) {
    this.turnId = turn.turnId ?? newTurnId();
    this.state = "waiting";
    this.lastSeq = -1;
    this.duplicates = 0;
    this.gaps = 0;
    this.samplesReceived = 0;
    this._gapAt = null;
    this._pcm = new PcmAssembler();
    /** @type {Record<string, unknown>} */
    const message = { action: "sendMessage", prompt: turn.prompt };
    if (turn.voice) message.voice = turn.voice;
    if (turn.speed !== undefined) message.speed = turn.speed;
    if (turn.mode !== undefined) message.mode = turn.mode;
    message.turn_id = this.turnId;
    return JSON.stringify(message);
  }

  /** The `cancel` for the current turn, or null when none is running. */
  cancelMessage() {
    if (!this.turnActive || this.turnId === null) return null;
    return JSON.stringify({ action: "cancel", turn_id: this.turnId });
  }

  /** The `resume` to send after a reconnect (or a gap), or null when no turn is running. */
  resumeMessage() {
    if (!this.turnActive || this.turnId === null) return null;
    return JSON.stringify({ action: "resume", turn_id: this.turnId, after_seq: this.lastSeq });
  }

  /**
   * One message from the gateway.
   * @param {string} data
   * @returns {ClientEvent[]}
   */
  receive(data) {
    /** @type {any} */
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return [{ type: "protocol_error", message: "the gateway sent a message that is not JSON" }];
    }
    if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
      return [{ type: "protocol_error", message: "the gateway sent a message that is not a JSON object" }];
    }
    if (msg.type === "turn_accepted") {
      if (msg.turn_id !== this.turnId) return [];
      return [{ type: "turn_accepted", turnId: String(msg.turn_id) }];
    }
    if (msg.type === "error" && !("seq" in msg)) return this._rejection(msg);
    if (typeof msg.seq !== "number" || !Number.isInteger(msg.seq) || typeof msg.turn_id !== "string") {
      return [{ type: "protocol_error", message: `gateway message of type ${String(msg.type).slice(0, 40)} lacks turn_id or seq` }];
    }
    if (msg.turn_id !== this.turnId || this.state === "finished" || this.state === "idle") return [];
    if (msg.seq <= this.lastSeq) {
      this.duplicates += 1;
      return [];
    }
    if (msg.seq > this.lastSeq + 1) {
      if (this._gapAt === this.lastSeq + 1) return [];
      this._gapAt = this.lastSeq + 1;
      this.gaps += 1;
      return [{ type: "gap", expected: this.lastSeq + 1, got: msg.seq }];
    }
    this.lastSeq = msg.seq;
    this._gapAt = null;
    this.state = "streaming";
    return this._apply(msg);
  }

  /**
   * @param {any} msg a rejection (error without seq)
   * @returns {ClientEvent[]}
   */
  _rejection(msg) {
    const code = String(msg.code ?? "internal_error");
    const message = String(msg.message ?? "");
    /** @type {ClientEvent} */
    const rejected = { type: "rejected", code, message };
    if (typeof msg.turn_id === "string") rejected.turnId = msg.turn_id;
    const mine = this.turnActive && (msg.turn_id === undefined || msg.turn_id === this.turnId);
    const endsTurn = mine && (this.state === "waiting" || TURN_ENDING_REJECTIONS.has(code));
    if (!endsTurn) return [rejected];
    this.state = "finished";
    return [rejected, { type: "turn_error", code, message }];
  }

  /**
   * Apply the next turn message (its seq is lastSeq).
   * @param {any} msg
   * @returns {ClientEvent[]}
   */
  _apply(msg) {
    switch (msg.type) {
      case "agent_start":
        return [{ type: "turn_started", turnId: msg.turn_id }];
      case "text_delta":
        return [{ type: "text", text: String(msg.text ?? ""), seq: msg.seq }];
      case "audio_stream_start":
        this._pcm.reset();
        return [{ type: "audio_start", sampleRate: Number(msg.sample_rate ?? 24000), voice: String(msg.voice ?? "") }];
      case "audio_chunk": {
        /** @type {ClientEvent[]} */
        const out = [];
        if (typeof msg.sample_offset === "number" && msg.sample_offset !== this.samplesReceived) {
          out.push({
            type: "protocol_error",
            message: `audio at sample ${msg.sample_offset} but ${this.samplesReceived} samples were received`,
          });
        }
        const samples = this._pcm.push(base64ToBytes(String(msg.data ?? "")));
        const sampleOffset = this.samplesReceived;
        this.samplesReceived += samples.length;
        if (samples.length > 0) out.push({ type: "audio", samples, sampleOffset });
        return out;
      }
      case "audio_stream_end":
        return [{ type: "audio_end", durationS: Number(msg.duration_s ?? 0), totalSamples: Number(msg.total_samples ?? 0) }];
      case "agent_end":
        this.state = "finished";
        return [{ type: "turn_end", status: String(msg.status ?? "completed") }];
      case "error":
        this.state = "finished";
        return [{ type: "turn_error", code: String(msg.code ?? "internal_error"), message: String(msg.message ?? "") }];
      default:
        return []; // a message type this client does not know: numbered, so it is skipped, not a gap
    }
  }
}
