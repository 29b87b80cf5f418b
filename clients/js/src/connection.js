// The WebSocket connection to the gateway (docs/client-protocol.md §1, §6): dial with a token in the query string,
// hand every message to the sans-I/O ClientSession, and after any close the client did not ask for, reconnect
// with exponential backoff and full jitter, then `resume` every unfinished turn.
//
// Guarantees:
// - Nothing lost, nothing repeated: after a reconnect every unfinished turn is resumed from its last applied seq
//   (the session drops replayed duplicates), and a gap on an open socket is resumed at once.
// - A turn that goes silent on a socket that still looks open is resumed on it after `stallMs`; if that resume
//   (or a `wake()` probe) hears nothing back within `probeMs`, the socket is taken for dead and replaced (a phone
//   that switched networks keeps a half-open socket that never closes by itself).
// - Tokens: `getToken()` is called for the first dial, again before any dial that follows a failed handshake
//   (browsers hide the HTTP 401 of a refused handshake: any close before open counts), when the cached token's
//   `exp` is less than `tokenSkewMs` away, and after an `unauthorized` rejection.
// - A message sent while the socket is not open waits in an outbox and goes out, in order, once it is.
// - A `newConversation` not answered when the socket went is sent again on the next one (a second is harmless).
// - A turn whose sendMessage may never have reached the gateway (the connection dropped before `turn_accepted`,
//   and the resume is answered `unknown_turn`) is sent again with the same turn id, not given up.
// - A turn whose sendMessage the gateway closed the connection over (1009, message too big) ends at once
//   (rejected, limit_exceeded) and is never sent again; the connection is re-established for later turns.
//
// All protocol logic (numbering, dedupe, gaps, PCM reassembly, what to resume from) lives in session.js.

import { STALL_RESUME_MS, TurnPhase, utf8Length } from "./session.js";
import { OPEN, timersImpl, webSocketImpl } from "./platform.js";

/** Backoff: attempt n waits a uniformly random time in [0, min(maxMs, baseMs·2ⁿ)] ("full jitter"). */
export const DEFAULT_BACKOFF = Object.freeze({ baseMs: 250, maxMs: 8000, maxAttempts: 12 });
/** How long a resume sent on an open socket may go unanswered before the socket is taken for dead. */
export const PROBE_MS = 5000;
/** A handshake not answered within this is abandoned and retried. */
export const CONNECT_TIMEOUT_MS = 15_000;
/** A token whose `exp` is closer than this is refreshed before a dial. */
export const TOKEN_SKEW_MS = 10_000;
/**
 * relay_core.close_codes.MESSAGE_TOO_BIG (RFC 6455): API Gateway closes a connection with it on a frame over
 * 32 KB or a message over 128 KB.
 */
export const MESSAGE_TOO_BIG = 1009;

/** @typedef {"idle" | "connecting" | "open" | "reconnecting" | "closed"} ConnectionState */

/**
 * @typedef {object} ConnectionOptions
 * @property {string} url         ws:// or wss:// URL of the gateway (without the token)
 * @property {() => string | Promise<string>} getToken  a JWT for this user (called again to refresh, see above)
 * @property {import("./session.js").ClientSession} session
 * @property {(event: import("./session.js").ClientEvent) => void} onEvent
 * @property {(state: ConnectionState, detail: string) => void} [onState]
 * @property {import("./platform.js").WebSocketConstructor} [WebSocket]
 * @property {import("./platform.js").Timers} [timers]
 * @property {{baseMs?: number, maxMs?: number, maxAttempts?: number}} [backoff]
 * @property {number | null} [stallMs]  silence before a resume on the open socket (null: never)
 * @property {number} [probeMs]
 * @property {number} [connectTimeoutMs]
 * @property {number} [tokenSkewMs]
 * @property {() => number} [random]  in [0, 1): the jitter (tests make it fixed)
 * @property {() => number} [now]     ms since the epoch, to read a token's exp
 */

export class Connection {
  /** @param {ConnectionOptions} options */
  constructor(options) {
    this.url = options.url;
    this.session = options.session;
    this._getToken = options.getToken;
    this._onEvent = options.onEvent;
    this._onState = options.onState ?? (() => undefined);
    this._WebSocket = webSocketImpl(options.WebSocket);
    this._timers = timersImpl(options.timers);
    this.backoff = { ...DEFAULT_BACKOFF, ...(options.backoff ?? {}) };
    this.stallMs = options.stallMs === undefined ? STALL_RESUME_MS : options.stallMs;
    this.probeMs = options.probeMs ?? PROBE_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    this.tokenSkewMs = options.tokenSkewMs ?? TOKEN_SKEW_MS;
    this._random = options.random ?? Math.random;
    this._now = options.now ?? Date.now;
    /** @type {import("./platform.js").WebSocketLike | null} */
    this.socket = null;
    /** @type {ConnectionState} */
    this.state = "idle";
    /** @type {string | null} */
    this._token = null;
    this._refreshToken = true;
    this._closing = false;
    this._attempt = 0;
    this._dialing = false;
    /** @type {unknown} */ this._reconnectTimer = null;
    /** @type {unknown} */ this._stallTimer = null;
    /** @type {unknown} */ this._probeTimer = null;
    /** @type {{data: string, turnId: string | null}[]} messages waiting for an open socket */
    this._outbox = [];
    /**
     * The sendMessage of each turn not yet heard of (to send again if it was lost) and the socket it last went
     * out on (null: not yet; a 1009 close of that socket ends the turn).
     * @type {Map<string, {data: string, socket: import("./platform.js").WebSocketLike | null}>}
     */
    this._unconfirmed = new Map();
    // Counters (test hooks and diagnostics).
    this.drops = 0;
    this.reconnects = 0;
    this.stallResumes = 0;
    this.tokenRequests = 0;
    this.deadSockets = 0;
    this.resends = 0;
    /** turns ended because the gateway closed the connection over their sendMessage (1009) */
    this.tooBig = 0;
    /** @type {string[]} every message sent, in order */
    this.sent = [];
  }

  /** Dial now if not connected (no-op while connecting or open). */
  connect() {
    this._closing = false;
    if (this.socket !== null || this._dialing) return;
    this._cancelReconnect();
    void this._dial(this.drops > 0 || this.state === "closed");
  }

  /**
   * Send a message now, or as soon as the socket is open. `turnId`: the turn a sendMessage starts (such a turn
   * is not resumed before its sendMessage went out).
   * @param {string} data
   * @param {string | null} [turnId]
   */
  send(data, turnId = null) {
    if (turnId !== null) this._unconfirmed.set(turnId, { data, socket: null });
    const socket = this.socket;
    if (socket !== null && socket.readyState === OPEN) {
      this._write(socket, data, turnId);
      this._armStall();
    } else {
      this._outbox.push({ data, turnId });
      if (this.state === "idle" || this.state === "closed") this.connect();
    }
  }

  /**
   * The app is back (foreground, page shown, network online): dial at once if the connection is down or waiting
   * to retry; on an open socket, resume the unfinished turns and take the socket for dead if nothing answers
   * within `probeMs`.
   */
  wake() {
    if (this._closing) return;
    const socket = this.socket;
    if (socket !== null && socket.readyState === OPEN) {
      this._resumeOnOpenSocket(socket);
      return;
    }
    if (socket === null && !this._dialing) {
      this._attempt = 0;
      this._cancelReconnect();
      void this._dial(true);
    }
  }

  /**
   * The platform says the network is gone (a browser's `offline` event, React Native's NetInfo): drop the socket
   * now rather than wait for TCP to notice, and retry with backoff; wake() when the network is back.
   */
  networkLost() {
    if (this.socket !== null) this.socket.close(4002, "the network is gone");
  }

  /** Test hook: close the socket as a network failure would; the connection reconnects and resumes. */
  dropConnection() {
    if (this.socket !== null) this.socket.close(4000, "dropped by the test hook");
  }

  /** Close for good: no reconnect, nothing more is sent. */
  close() {
    this._closing = true;
    this._cancelReconnect();
    this._disarmStall();
    this._disarmProbe();
    const socket = this.socket;
    this.socket = null;
    if (socket !== null) socket.close(1000, "client closed");
    this._setState("closed", "closed by the client");
  }

  /** The cached token, or a fresh one from getToken() when it may be stale. */
  async _currentToken() {
    if (this._token === null || this._refreshToken || tokenExpiresWithin(this._token, this._now(), this.tokenSkewMs)) {
      this.tokenRequests += 1;
      const token = await this._getToken();
      if (typeof token !== "string" || token === "") throw new TypeError("getToken() must return a non-empty token string");
      this._token = token;
      this._refreshToken = false;
    }
    return this._token;
  }

  /** @param {boolean} resuming */
  async _dial(resuming) {
    this._dialing = true;
    this._setState(resuming ? "reconnecting" : "connecting", resuming ? "reconnecting" : "connecting");
    let token;
    try {
      token = await this._currentToken();
    } catch (err) {
      this._dialing = false;
      if (this._closing) return;
      this._refreshToken = true;
      this._scheduleReconnect(`getToken() failed: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    this._dialing = false;
    if (this._closing || this.socket !== null) return;
    const socket = new this._WebSocket(withToken(this.url, token));
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      if (socket !== this.socket) return;
      opened = true;
      this._timers.clearTimeout(openDeadline);
      this._attempt = 0;
      this._setState("open", "connected");
      const waiting = new Set(this._outbox.map((m) => m.turnId).filter((id) => id !== null));
      const resumes = this.session.unfinishedTurns.filter((t) => !waiting.has(t.turnId)).map((t) => this.session.resume(t.turnId));
      const restart = this.session.conversationPending ? this.session.newConversation() : null;
      if (restart !== null && !this._outbox.some((m) => m.data === restart)) resumes.unshift(restart);
      for (const data of resumes) this._write(socket, data);
      for (const { data, turnId } of this._outbox.splice(0)) this._write(socket, data, turnId);
      this._armStall();
    };
    socket.onmessage = (message) => {
      if (socket !== this.socket) return;
      this._disarmProbe();
      const data = message.data;
      if (typeof data !== "string") return; // the gateway sends text frames only
      if (this._resendIfLost(socket, data)) return;
      for (const event of this.session.receive(data)) {
        if ("turnId" in event && event.turnId !== null && event.type !== "rejected") this._unconfirmed.delete(event.turnId);
        if (event.type === "gap_detected") this.send(this.session.resume(event.turnId)); // resend from the last applied
        if (event.type === "rejected" && event.code === "unauthorized") {
          this._refreshToken = true; // the connection lost its user: a fresh token on a new connection
          this._timers.setTimeout(() => this.dropConnection(), 0);
        }
        this._onEvent(event);
      }
      this._armStall();
    };
    /** The socket is gone (closed, or failed to open): reconnect unless the client closed it. @param {string} why */
    const lost = (why) => {
      if (socket !== this.socket) return;
      this.socket = null;
      this._timers.clearTimeout(openDeadline);
      this._disarmStall();
      this._disarmProbe();
      if (this._closing) {
        this._setState("closed", "closed");
        return;
      }
      if (!opened) this._refreshToken = true; // maybe a 401: the next dial gets a new token
      else this.drops += 1;
      this._scheduleReconnect(why);
    };
    socket.onclose = (close) => {
      if (opened && close.code === MESSAGE_TOO_BIG && socket === this.socket) this._endTooBig(socket);
      lost(opened ? `connection lost (code ${close.code})` : "could not connect");
    };
    socket.onerror = () => {
      // Browsers follow an error with a close, which says what to do next. Some WebSockets (Node 20's undici)
      // report a refused handshake with an error only and stay CONNECTING: that is a failed dial too.
      if (!opened) {
        lost("could not connect");
        try {
          socket.close();
        } catch {
          // a socket that never opened may refuse close(): it is dropped either way
        }
      }
    };
    // A handshake that hangs (a captive portal, a dead network) is a failed dial too.
    const openDeadline = this._timers.setTimeout(() => {
      if (!opened && socket === this.socket) {
        lost(`no answer to the handshake within ${this.connectTimeoutMs} ms`);
        try {
          socket.close();
        } catch {
          // see above
        }
      }
    }, this.connectTimeoutMs);
  }

  /**
   * @param {import("./platform.js").WebSocketLike} socket
   * @param {string} data
   * @param {string | null} [turnId]  the turn whose sendMessage `data` is
   */
  _write(socket, data, turnId = null) {
    socket.send(data);
    this.sent.push(data);
    const unconfirmed = turnId === null ? undefined : this._unconfirmed.get(turnId);
    if (unconfirmed !== undefined) unconfirmed.socket = socket;
  }

  /**
   * The gateway closed `socket` with 1009: the largest sendMessage that went out on it and was not heard of is
   * the one it refused. That turn ends (session.closedTooBig) rather than being resumed and sent again on the
   * next connection, which the gateway would close the same way, for ever.
   * @param {import("./platform.js").WebSocketLike} socket
   */
  _endTooBig(socket) {
    let culprit = null;
    let size = -1;
    for (const [turnId, unconfirmed] of this._unconfirmed) {
      const bytes = unconfirmed.socket === socket ? utf8Length(unconfirmed.data) : -1;
      if (bytes > size) [culprit, size] = [turnId, bytes];
    }
    if (culprit === null) return;
    this._unconfirmed.delete(culprit);
    this.tooBig += 1;
    for (const event of this.session.closedTooBig(culprit, size)) this._onEvent(event);
  }

  /**
   * Whether `data` is the `unknown_turn` answer to the resume of a turn whose sendMessage never reached the
   * gateway; if so, that sendMessage is sent again (same turn id) and the answer is not passed on.
   * @param {import("./platform.js").WebSocketLike} socket
   * @param {string} data
   */
  _resendIfLost(socket, data) {
    if (this._unconfirmed.size === 0 || !data.includes('"unknown_turn"')) return false;
    /** @type {any} */
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return false;
    }
    const turn = typeof msg?.turn_id === "string" ? this.session.turns.get(msg.turn_id) : undefined;
    const original = turn === undefined ? undefined : this._unconfirmed.get(turn.turnId);
    if (msg.type !== "error" || "seq" in msg || msg.code !== "unknown_turn" || turn === undefined || original === undefined) return false;
    if (turn.phase !== TurnPhase.SENT || turn.lastSeq !== -1 || !turn.resumePending) return false;
    turn.resumePending = false;
    this.resends += 1;
    this._write(socket, original.data, turn.turnId);
    return true;
  }

  /** The turns a silence would stall: accepted (or already streaming) and unfinished. */
  _stallable() {
    return this.session.unfinishedTurns.filter((t) => t.phase !== TurnPhase.SENT);
  }

  /**
   * Resume every stallable turn on the open socket and expect an answer within probeMs.
   * @param {import("./platform.js").WebSocketLike} socket
   */
  _resumeOnOpenSocket(socket) {
    const turns = this._stallable();
    if (turns.length === 0) return 0;
    for (const turn of turns) this._write(socket, this.session.resume(turn.turnId));
    this._armProbe(socket);
    return turns.length;
  }

  /** (Re)start the silence timer: heard from (or sent to) the gateway just now. */
  _armStall() {
    this._disarmStall();
    if (this.stallMs === null || this._stallable().length === 0) return;
    this._stallTimer = this._timers.setTimeout(() => {
      this._stallTimer = null;
      const socket = this.socket;
      if (socket === null || socket.readyState !== OPEN) return;
      this.stallResumes += this._resumeOnOpenSocket(socket);
      this._armStall();
    }, this.stallMs);
  }

  _disarmStall() {
    if (this._stallTimer !== null) this._timers.clearTimeout(this._stallTimer);
    this._stallTimer = null;
  }

  /** @param {import("./platform.js").WebSocketLike} socket */
  _armProbe(socket) {
    if (this._probeTimer !== null) return;
    this._probeTimer = this._timers.setTimeout(() => {
      this._probeTimer = null;
      if (socket !== this.socket) return;
      this.deadSockets += 1; // a resume went unanswered: the socket is half-open (e.g. the network changed)
      socket.close(4001, "no answer to a resume: taken for dead");
    }, this.probeMs);
  }

  _disarmProbe() {
    if (this._probeTimer !== null) this._timers.clearTimeout(this._probeTimer);
    this._probeTimer = null;
  }

  _cancelReconnect() {
    if (this._reconnectTimer !== null) this._timers.clearTimeout(this._reconnectTimer);
    this._reconnectTimer = null;
  }

  /** The delay before attempt n (0-based): full jitter over a capped exponential. */
  backoffDelay(/** @type {number} */ attempt) {
    const cap = Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** attempt);
    return Math.floor(this._random() * cap);
  }

  /** @param {string} why */
  _scheduleReconnect(why) {
    if (this._attempt >= this.backoff.maxAttempts) {
      this._setState("closed", `${why}; gave up after ${this.backoff.maxAttempts} attempts: call wake() or send() to retry`);
      return;
    }
    const delay = this.backoffDelay(this._attempt);
    this._attempt += 1;
    this._setState("reconnecting", `${why}; retrying in ${delay} ms`);
    this._cancelReconnect();
    this._reconnectTimer = this._timers.setTimeout(() => {
      this._reconnectTimer = null;
      if (this._closing || this.socket !== null || this._dialing) return;
      this.reconnects += 1;
      void this._dial(true);
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

/**
 * The URL actually dialled: the gateway URL with the token as the `token` query parameter (browsers cannot set
 * headers on a WebSocket).
 * @param {string} url
 * @param {string} token
 */
export function withToken(url, token) {
  const hash = url.indexOf("#");
  const base = hash < 0 ? url : url.slice(0, hash);
  return `${base}${base.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}`;
}

/**
 * Whether a JWT's `exp` claim is less than `skewMs` after `nowMs` (false for a token without a readable exp: the
 * gateway's answer then decides).
 * @param {string} token
 * @param {number} nowMs
 * @param {number} skewMs
 */
export function tokenExpiresWithin(token, nowMs, skewMs) {
  const exp = jwtExp(token);
  return exp !== null && exp * 1000 - nowMs < skewMs;
}

/**
 * The `exp` claim of a JWT (seconds since the epoch), or null. Display and scheduling only: never a verification.
 * @param {string} token
 */
export function jwtExp(token) {
  const part = token.split(".")[1];
  if (part === undefined) return null;
  try {
    const bytes = base64UrlBytes(part);
    let json = "";
    for (const b of bytes) json += String.fromCharCode(b); // exp is ASCII; other claims may be garbled, unused
    const exp = JSON.parse(json).exp;
    return typeof exp === "number" && Number.isFinite(exp) ? exp : null;
  } catch {
    return null;
  }
}

/** @param {string} text */
function base64UrlBytes(text) {
  const table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const out = [];
  let acc = 0;
  let bits = 0;
  for (const ch of text.replace(/=+$/, "")) {
    const v = table.indexOf(ch);
    if (v < 0) throw new RangeError("not base64url");
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  return out;
}
