/**
 * Audio seconds playback falls behind a link of `rate` while `remainingS` seconds of audio still arrive: what
 * must be buffered before starting so that it never runs dry (0 at or above real time; Infinity with no rate).
 * @param {number | null} rate
 * @param {number} remainingS
 */
export function deficitS(rate: number | null, remainingS: number): number;
/** Audio seconds a turn is assumed to hold when the sink does not know (a spoken reply of a sentence or two). */
export const DEFAULT_EXPECTED_S: 4;
/** Extra audio buffered beyond the computed deficit, for arrival jitter. */
export const DEFAULT_MARGIN_S: 0.25;
/**
 * The longest start-up (or rebuffer) wait, measured from the buffer's first arrival (wall seconds). A WebSocket
 * message arrives whole, and with Opus one message can hold a sentence (~1.7 s of speech): on a link at 0.6x real
 * time it takes ~3 s to arrive. A reply of E seconds at rate r needs E (1 - r) wall seconds of wait: a 12 s reply
 * at 0.6x waits ~5 s of audio, 8 s of wall time. Past this bound playback starts anyway (and may rebuffer once).
 */
export const DEFAULT_MAX_WAIT_S: 10;
/**
 * @typedef {object} StartupOptions
 * @property {number} [expectedS] audio seconds the turn is assumed to hold (default DEFAULT_EXPECTED_S)
 * @property {number} [marginS]   audio seconds kept beyond the deficit (default DEFAULT_MARGIN_S)
 * @property {number} [maxWaitS]  longest wait after the first arrival (default DEFAULT_MAX_WAIT_S)
 * @property {number | null} [priorRate] the link's rate known before this buffer's arrivals (the previous turn's, the
 *   platform's estimate, or for a rebuffer this turn's; null: none)
 * @property {number} [chunkS] audio seconds of the largest message expected (the previous turn's largest; this turn's
 *   own largest arrival counts too)
 * @property {ArrivalRate} [arrivals] where the rate is measured (default: this buffer's own arrivals; a rebuffer
 *   shares the turn's, so its rate covers the whole turn)
 */
/**
 * @typedef {object} StartupDecision
 * @property {boolean} start     whether playback should start now
 * @property {number | null} rate audio seconds per wall second: this turn's so far, else the prior turn's (null: none)
 * @property {number} bufferedS  audio seconds that have arrived
 * @property {number} neededS    audio seconds that must be buffered at this rate (Infinity: unknown yet)
 */
/**
 * A turn's arrival rate: audio seconds per wall second between its first and latest arrival, the first arrival's
 * audio not counted (it was already there when the clock started).
 */
export class ArrivalRate {
    /** @type {number | null} wall time (s) of the first arrival */
    firstAt: number | null;
    firstS: number;
    /** Audio seconds that have arrived, the first arrival's included. */
    audioS: number;
    /** @type {number | null} wall time (s) of the latest arrival */
    lastAt: number | null;
    /** Audio seconds of the largest single arrival. */
    largestS: number;
    /**
     * @param {number} audioS
     * @param {number} nowS
     */
    add(audioS: number, nowS: number): void;
    /**
     * The rate (null before a second arrival; Infinity when all came at the same instant, faster than measurable).
     * @returns {number | null}
     */
    rate(): number | null;
}
/** The start-up decision of one turn (or of one rebuffer): feed it arrivals until it says start. */
export class StartupBuffer {
    /** @param {StartupOptions} [options] */
    constructor(options?: StartupOptions);
    expectedS: number;
    marginS: number;
    maxWaitS: number;
    chunkS: number;
    /** @type {number | null} */
    priorRate: number | null;
    _shared: boolean;
    arrivals: ArrivalRate;
    /** @type {number | null} wall time (s) of this buffer's first arrival */
    firstAt: number | null;
    /** Audio seconds that arrived into this buffer. */
    bufferedS: number;
    /**
     * The measured rate, else the prior (null: neither).
     * @returns {number | null}
     */
    rate(): number | null;
    /**
     * Wall time (s) after which playback starts whatever arrives (null before the first arrival).
     * @returns {number | null}
     */
    deadline(): number | null;
    /**
     * Record `audioS` seconds of audio arriving at wall time `nowS`, and decide. (With shared arrivals the owner
     * records them there first.)
     * @param {number} audioS
     * @param {number} nowS
     * @returns {StartupDecision}
     */
    arrive(audioS: number, nowS: number): StartupDecision;
    /**
     * The turn's expected length changed (its text grew): decide again with `expectedS` audio seconds in all.
     * @param {number} expectedS
     * @param {number} nowS
     * @returns {StartupDecision}
     */
    expect(expectedS: number, nowS: number): StartupDecision;
    /**
     * Whether to start at wall time `nowS` with what has arrived.
     * @param {number} nowS
     * @returns {StartupDecision}
     */
    decide(nowS: number): StartupDecision;
}
export type StartupOptions = {
    /**
     * audio seconds the turn is assumed to hold (default DEFAULT_EXPECTED_S)
     */
    expectedS?: number | undefined;
    /**
     * audio seconds kept beyond the deficit (default DEFAULT_MARGIN_S)
     */
    marginS?: number | undefined;
    /**
     * longest wait after the first arrival (default DEFAULT_MAX_WAIT_S)
     */
    maxWaitS?: number | undefined;
    /**
     * the link's rate known before this buffer's arrivals (the previous turn's, the
     * platform's estimate, or for a rebuffer this turn's; null: none)
     */
    priorRate?: number | null | undefined;
    /**
     * audio seconds of the largest message expected (the previous turn's largest; this turn's
     * own largest arrival counts too)
     */
    chunkS?: number | undefined;
    /**
     * where the rate is measured (default: this buffer's own arrivals; a rebuffer
     * shares the turn's, so its rate covers the whole turn)
     */
    arrivals?: ArrivalRate | undefined;
};
export type StartupDecision = {
    /**
     * whether playback should start now
     */
    start: boolean;
    /**
     * audio seconds per wall second: this turn's so far, else the prior turn's (null: none)
     */
    rate: number | null;
    /**
     * audio seconds that have arrived
     */
    bufferedS: number;
    /**
     * audio seconds that must be buffered at this rate (Infinity: unknown yet)
     */
    neededS: number;
};
