// What the library needs from its platform, and where it finds it. Nothing here touches the DOM: a browser,
// React Native and Node ≥ 22 have a global WebSocket and timers; Node 20 needs --experimental-websocket or an
// injected implementation (e.g. the `ws` package's WebSocket).

/**
 * The part of the WHATWG WebSocket the library uses (browsers, React Native, Node's global, `ws`).
 * @typedef {object} WebSocketLike
 * @property {number} readyState
 * @property {(data: string) => void} send
 * @property {(code?: number, reason?: string) => void} close
 * @property {((event: any) => void) | null} onopen
 * @property {((event: {data: unknown}) => void) | null} onmessage
 * @property {((event: {code: number, reason?: string}) => void) | null} onclose
 * @property {((event: any) => void) | null} onerror
 */

/** @typedef {new (url: string) => WebSocketLike} WebSocketConstructor */

/**
 * Timers (the platform's setTimeout/clearTimeout by default; a test injects fake ones).
 * @typedef {{setTimeout: (fn: () => void, ms: number) => unknown, clearTimeout: (handle: any) => void}} Timers
 */

/** WebSocket.OPEN, the same number on every platform. */
export const OPEN = 1;

/** Raised when the platform lacks something the library needs and the app did not inject it. */
export class PlatformError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "PlatformError";
  }
}

/**
 * The WebSocket constructor to use: the injected one, else the global one.
 * @param {WebSocketConstructor | undefined} injected
 * @returns {WebSocketConstructor}
 */
export function webSocketImpl(injected) {
  const found = injected ?? /** @type {any} */ (globalThis).WebSocket;
  if (typeof found !== "function") {
    throw new PlatformError(
      "no WebSocket on this platform: pass connect({WebSocket}) (Node 20: run with --experimental-websocket, or pass the `ws` package's WebSocket)",
    );
  }
  return found;
}

/**
 * The timers to use: the injected ones, else the global setTimeout/clearTimeout.
 * @param {Timers | undefined} injected
 * @returns {Timers}
 */
export function timersImpl(injected) {
  if (injected) return injected;
  const g = /** @type {any} */ (globalThis);
  if (typeof g.setTimeout !== "function") throw new PlatformError("no setTimeout on this platform: pass connect({timers})");
  return { setTimeout: (fn, ms) => g.setTimeout(fn, ms), clearTimeout: (handle) => g.clearTimeout(handle) };
}

/**
 * How much of `navigator.connection.downlink` to count on: Chromium multiplies its estimate by a random factor of
 * 0.9 to 1.1 (fixed per browser process, against fingerprinting) and rounds it to 25 kbit/s, so the link may be 10 %
 * slower than it says (DevTools emulating 0.4 Mbit/s was reported as 0.35 in one run, 0.4 in another).
 */
export const DOWNLINK_TRUSTED_SHARE = 0.9;

/**
 * The platform's estimate of the network's downlink in bits per second, at the low end of its noise
 * (`DOWNLINK_TRUSTED_SHARE`): the Network Information API's `navigator.connection.downlink` (megabits per second;
 * Chromium-based browsers, Android WebView), null where the platform has none (Firefox, Safari, Node, React Native
 * without a polyfill) or it says nothing useful (0).
 * @returns {number | null}
 */
export function platformDownlinkBps() {
  const downlink = /** @type {any} */ (globalThis).navigator?.connection?.downlink;
  return typeof downlink === "number" && Number.isFinite(downlink) && downlink > 0
    ? downlink * 1e6 * DOWNLINK_TRUSTED_SHARE
    : null;
}
