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
 * The longest start-up wait, measured from the turn's first arrival (wall seconds). A WebSocket message arrives
 * whole, and with Opus one message can hold a sentence (~1.7 s of speech): on a link at 0.6x real time it takes
 * ~3 s to arrive, so a shorter bound would start just before the second sentence lands, and stall.
 */
export const DEFAULT_MAX_WAIT_S: 5;
/**
 * @typedef {object} StartupOptions
 * @property {number} [expectedS] audio seconds the turn is assumed to hold (default DEFAULT_EXPECTED_S)
 * @property {number} [marginS]   audio seconds kept beyond the deficit (default DEFAULT_MARGIN_S)
 * @property {number} [maxWaitS]  longest wait after the first arrival (default DEFAULT_MAX_WAIT_S)
 * @property {number | null} [priorRate] the link's rate measured on the previous turn (null: none measured)
 */
/**
 * @typedef {object} StartupDecision
 * @property {boolean} start     whether playback should start now
 * @property {number | null} rate audio seconds per wall second: this turn's so far, else the prior turn's (null: none)
 * @property {number} bufferedS  audio seconds that have arrived
 * @property {number} neededS    audio seconds that must be buffered at this rate (Infinity: unknown yet)
 */
/** The start-up decision of one turn: feed it arrivals until it says start. */
export class StartupBuffer {
    /** @param {StartupOptions} [options] */
    constructor(options?: StartupOptions);
    expectedS: number;
    marginS: number;
    maxWaitS: number;
    priorRate: number | null;
    /** @type {number | null} wall time (s) of the first arrival */
    firstAt: number | null;
    firstS: number;
    bufferedS: number;
    /** @type {number | null} wall time (s) of the latest arrival */
    lastAt: number | null;
    /**
     * Audio seconds per wall second between the first and the latest arrival (null before a second arrival, or
     * when they came at the same instant: faster than anything measurable, reported as Infinity).
     * @returns {number | null}
     */
    rate(): number | null;
    /**
     * Wall time (s) after which playback starts whatever arrives (null before the first arrival).
     * @returns {number | null}
     */
    deadline(): number | null;
    /**
     * Record `audioS` seconds of audio arriving at wall time `nowS`, and decide.
     * @param {number} audioS
     * @param {number} nowS
     * @returns {StartupDecision}
     */
    arrive(audioS: number, nowS: number): StartupDecision;
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
     * the link's rate measured on the previous turn (null: none measured)
     */
    priorRate?: number | null | undefined;
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
