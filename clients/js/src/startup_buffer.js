// How long a turn's audio waits before it starts to play, chosen from the link: the start-up buffer.
//
// Pure (no timers, no audio): the sink reports each arrival (audio seconds, wall clock) and asks whether to start.
// A link's rate is the audio seconds that arrive per wall second. A link at rate r < 1 that still has R seconds of
// audio to deliver falls behind playback by R (1 - r) / r seconds before the last audio arrives, so playback that
// starts with at least that much buffered (plus a margin for jitter) never stalls. The rest of the stream is
// estimated as the expected turn length less what has arrived.
//
// The first sound never waits for a measurement: with no earlier turn measured (`priorRate` null), or an earlier
// turn's link at or above real time, playback starts at the turn's first arrival, exactly as without a start-up
// buffer (a wait for a second arrival would cost every turn the gap between its first two messages). Once a turn
// has measured a slow link (the sink passes the previous turn's rate as `priorRate`), the next turn buffers: its
// own rate (between its first and latest arrival, the first chunk's audio not counted) once it has two arrivals,
// the prior rate before that. Nothing waits longer than maxWaitS after the first arrival, and the end of the stream
// starts playback at once.

/** Audio seconds a turn is assumed to hold when the sink does not know (a spoken reply of a sentence or two). */
export const DEFAULT_EXPECTED_S = 4;
/** Extra audio buffered beyond the computed deficit, for arrival jitter. */
export const DEFAULT_MARGIN_S = 0.25;
/**
 * The longest start-up wait, measured from the turn's first arrival (wall seconds). A WebSocket message arrives
 * whole, and with Opus one message can hold a sentence (~1.7 s of speech): on a link at 0.6x real time it takes
 * ~3 s to arrive, so a shorter bound would start just before the second sentence lands, and stall.
 */
export const DEFAULT_MAX_WAIT_S = 5;

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
  constructor(options = {}) {
    this.expectedS = options.expectedS ?? DEFAULT_EXPECTED_S;
    this.marginS = options.marginS ?? DEFAULT_MARGIN_S;
    this.maxWaitS = options.maxWaitS ?? DEFAULT_MAX_WAIT_S;
    this.priorRate = options.priorRate ?? null;
    /** @type {number | null} wall time (s) of the first arrival */
    this.firstAt = null;
    this.firstS = 0;
    this.bufferedS = 0;
    /** @type {number | null} wall time (s) of the latest arrival */
    this.lastAt = null;
  }

  /**
   * Audio seconds per wall second between the first and the latest arrival (null before a second arrival, or
   * when they came at the same instant: faster than anything measurable, reported as Infinity).
   * @returns {number | null}
   */
  rate() {
    if (this.firstAt === null || this.lastAt === null || this.bufferedS === this.firstS) return null;
    const elapsed = this.lastAt - this.firstAt;
    return elapsed > 0 ? (this.bufferedS - this.firstS) / elapsed : Infinity;
  }

  /**
   * Wall time (s) after which playback starts whatever arrives (null before the first arrival).
   * @returns {number | null}
   */
  deadline() {
    return this.firstAt === null ? null : this.firstAt + this.maxWaitS;
  }

  /**
   * Record `audioS` seconds of audio arriving at wall time `nowS`, and decide.
   * @param {number} audioS
   * @param {number} nowS
   * @returns {StartupDecision}
   */
  arrive(audioS, nowS) {
    if (this.firstAt === null) {
      this.firstAt = nowS;
      this.firstS = audioS;
    }
    this.lastAt = nowS;
    this.bufferedS += audioS;
    return this.decide(nowS);
  }

  /**
   * Whether to start at wall time `nowS` with what has arrived.
   * @param {number} nowS
   * @returns {StartupDecision}
   */
  decide(nowS) {
    const rate = this.rate() ?? this.priorRate;
    if (this.priorRate === null || this.priorRate >= 1) {
      // no slow link measured before this turn: the first sound goes out at once
      return { start: this.firstAt !== null, rate, bufferedS: this.bufferedS, neededS: 0 };
    }
    const neededS = deficitS(rate, Math.max(0, this.expectedS - this.bufferedS));
    const due = this.firstAt !== null && nowS - this.firstAt >= this.maxWaitS;
    const enough = this.bufferedS >= this.expectedS || neededS === 0 || this.bufferedS >= neededS + this.marginS;
    return { start: this.firstAt !== null && (due || enough), rate, bufferedS: this.bufferedS, neededS };
  }
}

/**
 * Audio seconds playback falls behind a link of `rate` while `remainingS` seconds of audio still arrive: what
 * must be buffered before starting so that it never runs dry (0 at or above real time; Infinity with no rate).
 * @param {number | null} rate
 * @param {number} remainingS
 */
export function deficitS(rate, remainingS) {
  if (rate === null) return Infinity;
  if (rate >= 1 || remainingS === 0) return 0;
  if (rate <= 0) return Infinity;
  return (remainingS * (1 - rate)) / rate;
}
