/**
 * The WebSocket constructor to use: the injected one, else the global one.
 * @param {WebSocketConstructor | undefined} injected
 * @returns {WebSocketConstructor}
 */
export function webSocketImpl(injected: WebSocketConstructor | undefined): WebSocketConstructor;
/**
 * The timers to use: the injected ones, else the global setTimeout/clearTimeout.
 * @param {Timers | undefined} injected
 * @returns {Timers}
 */
export function timersImpl(injected: Timers | undefined): Timers;
/**
 * The platform's estimate of the network's downlink in bits per second, at the low end of its noise
 * (`DOWNLINK_TRUSTED_SHARE`): the Network Information API's `navigator.connection.downlink` (megabits per second;
 * Chromium-based browsers, Android WebView), null where the platform has none (Firefox, Safari, Node, React Native
 * without a polyfill) or it says nothing useful (0).
 * @returns {number | null}
 */
export function platformDownlinkBps(): number | null;
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
export const OPEN: 1;
/** Raised when the platform lacks something the library needs and the app did not inject it. */
export class PlatformError extends Error {
    /** @param {string} message */
    constructor(message: string);
}
/**
 * How much of `navigator.connection.downlink` to count on: Chromium multiplies its estimate by a random factor of
 * 0.9 to 1.1 (fixed per browser process, against fingerprinting) and rounds it to 25 kbit/s, so the link may be 10 %
 * slower than it says (DevTools emulating 0.4 Mbit/s was reported as 0.35 in one run, 0.4 in another).
 */
export const DOWNLINK_TRUSTED_SHARE: 0.9;
/**
 * The part of the WHATWG WebSocket the library uses (browsers, React Native, Node's global, `ws`).
 */
export type WebSocketLike = {
    readyState: number;
    send: (data: string) => void;
    close: (code?: number, reason?: string) => void;
    onopen: ((event: any) => void) | null;
    onmessage: ((event: {
        data: unknown;
    }) => void) | null;
    onclose: ((event: {
        code: number;
        reason?: string;
    }) => void) | null;
    onerror: ((event: any) => void) | null;
};
export type WebSocketConstructor = new (url: string) => WebSocketLike;
/**
 * Timers (the platform's setTimeout/clearTimeout by default; a test injects fake ones).
 */
export type Timers = {
    setTimeout: (fn: () => void, ms: number) => unknown;
    clearTimeout: (handle: any) => void;
};
