// The WebSocket transport to the API Gateway (or the local gateway): connect with the token in the query
// string, hand every message to the sans-I/O ClientSession, and after a dropped connection reconnect and
// send the session's `resume` so the turn carries on where the client left it.
//
// All protocol logic (numbering, dedupe, gaps, PCM reassembly, what to resume from) lives in
// client_session.js; this module only moves strings and decides when to reconnect.
//
// A turn that goes silent on a socket that is still open (a message the gateway could not deliver, when no later
// message shows the gap) is resumed on the same connection after STALL_RESUME_MS without a message, as
// relay_core.client_session.STALL_RESUME_S says; a resume of a healthy turn is harmless.

import { STALL_RESUME_MS, TurnPhase } from "./client_session.js";

/** Delays before reconnect attempts, in ms; the last one repeats until `maxAttempts`. */
export const RECONNECT_DELAYS_MS = [0, 200, 500, 1000, 2000, 4000];
export const MAX_RECONNECT_ATTEMPTS = 12;

/** @typedef {"idle" | "connecting" | "open" | "reconnecting" | "closed"} ConnectionState */

/**
 * @typedef {object} GatewayOptions
 * @property {string} url         ws:// or wss:// URL of the gateway (without the token)
 * @property {string} token       bearer token (JWT), sent as ?token= (browsers cannot set WebSocket headers)
 * @property {import("./client_session.js").ClientSession} session
 * @property {(event: import("./client_session.js").ClientEvent) => void} onEvent
 * @property {(state: ConnectionState, detail: string) => void} [onState]
 * @property {typeof WebSocket} [WebSocketImpl]
 * @property {(fn: () => void, ms: number) => unknown} [setTimer]  schedules reconnects
 * @property {number | null} [stallMs]  silence before a resume on the open socket (null: never)
 * @property {(fn: () => void, ms: number) => unknown} [setStallTimer]
 * @property {(handle: any) => void} [clearStallTimer]
 */

export class GatewayClient {
  /** @param {GatewayOptions} options */
  constructor(options) {
    this.url = options.url;
    this.token = options.token;
    this.session = options.session;
    this._onEvent = options.onEvent;
    this._onState = options.onState ?? (() => undefined);
    this._WebSocket = options.WebSocketImpl ?? WebSocket;
    this._setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.stallMs = options.stallMs === undefined ? STALL_RESUME_MS : options.stallMs;
    this._setStallTimer = options.setStallTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this._clearStallTimer = options.clearStallTimer ?? ((handle) => clearTimeout(handle));
    /** @type {unknown} */
    this._stallTimer = null;
    /** Resumes sent on the open socket after a silence (test hook). */
    this.stallResumes = 0;
    /** @type {WebSocket | null} */
    this.socket = null;
    /** @type {ConnectionState} */
    this.state = "idle";
    this._closing = false;
    this._attempt = 0;
    this.reconnects = 0;
    this.drops = 0;
    /** Every message sent, in order (test hook and debugging aid; prompts stay in the page). */
    /** @type {string[]} */
    this.sent = [];
    /** @type {string[]} messages waiting for an open socket */
    this._outbox = [];
  }

  /** The URL actually dialled: the gateway URL with the token appended as a query parameter. */
  get dialUrl() {
    const url = new URL(this.url);
    url.searchParams.set("token", this.token);
    return url.toString();
  }

  connect() {
    this._closing = false;
    this._open(this.state === "reconnecting");
  }

  /**
   * Send a message now, or as soon as the socket is open.
   * @param {string} message
   */
  send(message) {
    if (this.socket !== null && this.socket.readyState === this._WebSocket.OPEN) {
      this.socket.send(message);
      this.sent.push(message);
      this._armStall();
    } else {
      this._outbox.push(message);
      if (this.state === "idle" || this.state === "closed") this.connect();
    }
  }

  /** Test hook: close the socket as a network failure would; the client reconnects and resumes. */
  dropConnection() {
    if (this.socket !== null) this.socket.close(4000, "dropped by the test hook");
  }

  /** Close for good (no reconnect). */
  close() {
    this._closing = true;
    this._disarmStall();
    if (this.socket !== null) this.socket.close(1000, "client closed");
    this._setState("closed", "closed by the client");
  }

  /** @param {boolean} resuming */
  _open(resuming) {
    this._setState(resuming ? "reconnecting" : "connecting", resuming ? "reconnecting" : "connecting");
    const socket = new this._WebSocket(this.dialUrl);
    this.socket = socket;
    socket.onopen = () => {
      if (socket !== this.socket) return;
      this._attempt = 0;
      this._setState("open", "connected");
      const resumes = resuming ? this.session.resumeAll() : [];
      const waiting = [...resumes, ...this._outbox.splice(0)];
      for (const message of waiting) {
        socket.send(message);
        this.sent.push(message);
      }
      this._armStall();
    };
    socket.onmessage = (message) => {
      if (socket !== this.socket) return;
      const data = message.data;
      if (typeof data !== "string") return; // the gateway sends text frames only
      for (const event of this.session.receive(data)) {
        if (event.type === "gap_detected") {
          // A message went missing on this connection: ask again from the last one applied.
          this.send(this.session.resume(event.turnId));
        }
        this._onEvent(event);
      }
      this._armStall();
    };
    socket.onclose = (close) => {
      if (socket !== this.socket) return;
      this.socket = null;
      this._disarmStall();
      if (this._closing) {
        this._setState("closed", "closed");
        return;
      }
      this.drops += 1;
      this._scheduleReconnect(`connection lost (code ${close.code})`);
    };
    socket.onerror = () => {
      // The close event that always follows carries what to do next.
    };
  }

  /** The turns a silence would stall: accepted (or already streaming) and unfinished. */
  _stallable() {
    return this.session.unfinishedTurns.filter((t) => t.phase !== TurnPhase.SENT);
  }

  /** (Re)start the silence timer: heard from (or sent to) the gateway just now. */
  _armStall() {
    this._disarmStall();
    if (this.stallMs === null || this._stallable().length === 0) return;
    this._stallTimer = this._setStallTimer(() => {
      this._stallTimer = null;
      const socket = this.socket;
      if (socket === null || socket.readyState !== this._WebSocket.OPEN) return;
      const stalled = this._stallable();
      for (const turn of stalled) {
        const message = this.session.resume(turn.turnId);
        socket.send(message);
        this.sent.push(message);
      }
      this.stallResumes += stalled.length;
      this._armStall();
    }, this.stallMs);
  }

  _disarmStall() {
    if (this._stallTimer !== null) this._clearStallTimer(this._stallTimer);
    this._stallTimer = null;
  }

  /** @param {string} why */
  _scheduleReconnect(why) {
    if (this._attempt >= MAX_RECONNECT_ATTEMPTS) {
      this._setState("closed", `${why}; gave up after ${MAX_RECONNECT_ATTEMPTS} attempts: reload to retry`);
      return;
    }
    const delay = RECONNECT_DELAYS_MS[Math.min(this._attempt, RECONNECT_DELAYS_MS.length - 1)];
    this._attempt += 1;
    this._setState("reconnecting", `${why}; reconnecting`);
    this._setTimer(() => {
      if (this._closing) return;
      this.reconnects += 1;
      this._open(true);
    }, delay);
  }

  /**
   * @param {ConnectionState} state
   * @param {string} detail
   */
  _setState(state, detail) {
    this.state = state;
    this._onState(state, detail);
  }
}
