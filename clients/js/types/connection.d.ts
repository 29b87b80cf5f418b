/**
 * The URL actually dialled: the gateway URL with the token as the `token` query parameter (browsers cannot set
 * headers on a WebSocket).
 * @param {string} url
 * @param {string} token
 */
export function withToken(url: string, token: string): string;
/**
 * Whether a JWT's `exp` claim is less than `skewMs` after `nowMs` (false for a token without a readable exp: the
 * gateway's answer then decides).
 * @param {string} token
 * @param {number} nowMs
 * @param {number} skewMs
 */
export function tokenExpiresWithin(token: string, nowMs: number, skewMs: number): boolean;
/**
 * The `exp` claim of a JWT (seconds since the epoch), or null. Display and scheduling only: never a verification.
 * @param {string} token
 */
export function jwtExp(token: string): number | null;
/** Backoff: attempt n waits a uniformly random time in [0, min(maxMs, baseMs·2ⁿ)] ("full jitter"). */
export const DEFAULT_BACKOFF: Readonly<{
    baseMs: 250;
    maxMs: 8000;
    maxAttempts: 12;
}>;
/** How long a resume sent on an open socket may go unanswered before the socket is taken for dead. */
export const PROBE_MS: 5000;
/** A handshake not answered within this is abandoned and retried. */
export const CONNECT_TIMEOUT_MS: 15000;
/** A token whose `exp` is closer than this is refreshed before a dial. */
export const TOKEN_SKEW_MS: 10000;
/**
 * relay_core.close_codes.MESSAGE_TOO_BIG (RFC 6455): API Gateway closes a connection with it on a frame over
 * 32 KB or a message over 128 KB.
 */
export const MESSAGE_TOO_BIG: 1009;
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
    constructor(options: ConnectionOptions);
    url: string;
    session: import("./session.js").ClientSession;
    _getToken: () => string | Promise<string>;
    _onEvent: (event: import("./session.js").ClientEvent) => void;
    _onState: (state: ConnectionState, detail: string) => void;
    _WebSocket: import("./platform.js").WebSocketConstructor;
    _timers: import("./platform.js").Timers;
    backoff: {
        baseMs: number;
        maxMs: number;
        maxAttempts: number;
    };
    stallMs: number | null;
    probeMs: number;
    connectTimeoutMs: number;
    tokenSkewMs: number;
    _random: () => number;
    _now: () => number;
    /** @type {import("./platform.js").WebSocketLike | null} */
    socket: import("./platform.js").WebSocketLike | null;
    /** @type {ConnectionState} */
    state: ConnectionState;
    /** @type {string | null} */
    _token: string | null;
    _refreshToken: boolean;
    _closing: boolean;
    _attempt: number;
    _dialing: boolean;
    /** @type {unknown} */ _reconnectTimer: unknown;
    /** @type {unknown} */ _stallTimer: unknown;
    /** @type {unknown} */ _probeTimer: unknown;
    /** @type {{data: string, turnId: string | null}[]} messages waiting for an open socket */
    _outbox: {
        data: string;
        turnId: string | null;
    }[];
    /**
     * The sendMessage of each turn not yet heard of (to send again if it was lost) and the socket it last went
     * out on (null: not yet; a 1009 close of that socket ends the turn).
     * @type {Map<string, {data: string, socket: import("./platform.js").WebSocketLike | null}>}
     */
    _unconfirmed: Map<string, {
        data: string;
        socket: import("./platform.js").WebSocketLike | null;
    }>;
    drops: number;
    reconnects: number;
    stallResumes: number;
    tokenRequests: number;
    deadSockets: number;
    resends: number;
    /** turns ended because the gateway closed the connection over their sendMessage (1009) */
    tooBig: number;
    /** @type {string[]} every message sent, in order */
    sent: string[];
    /** Dial now if not connected (no-op while connecting or open). */
    connect(): void;
    /**
     * Send a message now, or as soon as the socket is open. `turnId`: the turn a sendMessage starts (such a turn
     * is not resumed before its sendMessage went out).
     * @param {string} data
     * @param {string | null} [turnId]
     */
    send(data: string, turnId?: string | null): void;
    /**
     * The app is back (foreground, page shown, network online): dial at once if the connection is down or waiting
     * to retry; on an open socket, resume the unfinished turns and take the socket for dead if nothing answers
     * within `probeMs`.
     */
    wake(): void;
    /**
     * The platform says the network is gone (a browser's `offline` event, React Native's NetInfo): drop the socket
     * now rather than wait for TCP to notice, and retry with backoff; wake() when the network is back.
     */
    networkLost(): void;
    /** Test hook: close the socket as a network failure would; the connection reconnects and resumes. */
    dropConnection(): void;
    /** Close for good: no reconnect, nothing more is sent. */
    close(): void;
    /** The cached token, or a fresh one from getToken() when it may be stale. */
    _currentToken(): Promise<string>;
    /** @param {boolean} resuming */
    _dial(resuming: boolean): Promise<void>;
    /**
     * @param {import("./platform.js").WebSocketLike} socket
     * @param {string} data
     * @param {string | null} [turnId]  the turn whose sendMessage `data` is
     */
    _write(socket: import("./platform.js").WebSocketLike, data: string, turnId?: string | null): void;
    /**
     * The gateway closed `socket` with 1009: the largest sendMessage that went out on it and was not heard of is
     * the one it refused. That turn ends (session.closedTooBig) rather than being resumed and sent again on the
     * next connection, which the gateway would close the same way, for ever.
     * @param {import("./platform.js").WebSocketLike} socket
     */
    _endTooBig(socket: import("./platform.js").WebSocketLike): void;
    /**
     * Whether `data` is the `unknown_turn` answer to the resume of a turn whose sendMessage never reached the
     * gateway; if so, that sendMessage is sent again (same turn id) and the answer is not passed on.
     * @param {import("./platform.js").WebSocketLike} socket
     * @param {string} data
     */
    _resendIfLost(socket: import("./platform.js").WebSocketLike, data: string): boolean;
    /** The turns a silence would stall: accepted (or already streaming) and unfinished. */
    _stallable(): import("./session.js").ClientTurn[];
    /**
     * Resume every stallable turn on the open socket and expect an answer within probeMs.
     * @param {import("./platform.js").WebSocketLike} socket
     */
    _resumeOnOpenSocket(socket: import("./platform.js").WebSocketLike): number;
    /** (Re)start the silence timer: heard from (or sent to) the gateway just now. */
    _armStall(): void;
    _disarmStall(): void;
    /** @param {import("./platform.js").WebSocketLike} socket */
    _armProbe(socket: import("./platform.js").WebSocketLike): void;
    _disarmProbe(): void;
    _cancelReconnect(): void;
    /** The delay before attempt n (0-based): full jitter over a capped exponential. */
    backoffDelay(attempt: number): number;
    /** @param {string} why */
    _scheduleReconnect(why: string): void;
    /**
     * @param {ConnectionState} state
     * @param {string} detail
     */
    _setState(state: ConnectionState, detail: string): void;
}
export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "closed";
export type ConnectionOptions = {
    /**
     * ws:// or wss:// URL of the gateway (without the token)
     */
    url: string;
    /**
     * a JWT for this user (called again to refresh, see above)
     */
    getToken: () => string | Promise<string>;
    session: import("./session.js").ClientSession;
    onEvent: (event: import("./session.js").ClientEvent) => void;
    onState?: ((state: ConnectionState, detail: string) => void) | undefined;
    WebSocket?: import("./platform.js").WebSocketConstructor | undefined;
    timers?: import("./platform.js").Timers | undefined;
    backoff?: {
        baseMs?: number;
        maxMs?: number;
        maxAttempts?: number;
    } | undefined;
    /**
     * silence before a resume on the open socket (null: never)
     */
    stallMs?: number | null | undefined;
    probeMs?: number | undefined;
    connectTimeoutMs?: number | undefined;
    tokenSkewMs?: number | undefined;
    /**
     * in [0, 1): the jitter (tests make it fixed)
     */
    random?: (() => number) | undefined;
    /**
     * ms since the epoch, to read a token's exp
     */
    now?: (() => number) | undefined;
};
