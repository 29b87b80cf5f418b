// How long a turn's audio waits before it starts to play, chosen from the link: the start-up buffer, and the same
// decision again after a stall (the rebuffer).
//
// Pure (no timers, no audio): the sink reports each arrival (audio seconds, wall clock) and asks whether to start.
// A link's rate is the audio seconds that arrive per wall second (ArrivalRate: between a turn's first and latest
// arrival, the first chunk's audio not counted). A link at rate r < 1 that still has R seconds of audio to deliver
// falls behind playback by R (1 - r) / r seconds before the last audio arrives, so playback that starts with at least
// that much buffered (plus a margin for jitter) never stalls. Audio comes in messages that arrive whole, so the last
// one lands up to a message's length later than a smooth stream would: the margin also holds the largest message
// seen (this turn's, or the turn before's: `chunkS`; an Opus message can hold a sentence, ~1.7 s). The rest of the stream is the turn's expected length
// (expectedS: the sink's estimate from the reply's text, speech_length.js; DEFAULT_EXPECTED_S without one) less what
// has arrived; expect() updates it as text arrives.
//
// The first sound never waits for a measurement: with no prior rate (`priorRate` null: no earlier turn measured,
// and the platform gave no bandwidth estimate), or a prior at or above real time, playback starts at the turn's
// first arrival, exactly as without a start-up buffer. With a prior below real time (the previous turn's measured
// rate, or on a first turn the platform's downlink estimate: web_audio_sink.js), the turn buffers: at the turn's own
// rate once it has two arrivals, the prior before that. Nothing waits longer than maxWaitS after the buffer's first
// arrival, and the end of the stream starts playback at once.
//
// A first turn on a slow link without a prior starts at once and stalls when its audio runs dry; the sink then
// rebuffers ONCE with a StartupBuffer over the rest of the turn (priorRate and arrivals: the turn's measured rate;
// expectedS: the turn's expected length less the audio already played), so the turn stalls once and then plays
// through.

/** Audio seconds a turn is assumed to hold when the sink does not know (a spoken reply of a sentence or two). */
export const DEFAULT_EXPECTED_S = 4;
/** Extra audio buffered beyond the computed deficit, for arrival jitter. */
export const DEFAULT_MARGIN_S = 0.25;
/**
 * The longest start-up (or rebuffer) wait, measured from the buffer's first arrival (wall seconds). A WebSocket
 * message arrives whole, and with Opus one message can hold a sentence (~1.7 s of speech): on a link at 0.6x real
 * time it takes ~3 s to arrive. A reply of E seconds at rate r needs E (1 - r) wall seconds of wait: a 12 s reply
 * at 0.6x waits ~5 s of audio, 8 s of wall time. Past this bound playback starts anyway (and may rebuffer once).
 */
export const DEFAULT_MAX_WAIT_S = 10;

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
  constructor() {
    /** @type {number | null} wall time (s) of the first arrival */
    this.firstAt = null;
    this.firstS = 0;
    /** Audio seconds that have arrived, the first arrival's included. */
    this.audioS = 0;
    /** @type {number | null} wall time (s) of the latest arrival */
    this.lastAt = null;
    /** Audio seconds of the largest single arrival. */
    this.largestS = 0;
  }

  /**
   * @param {number} audioS
   * @param {number} nowS
   */
  add(audioS, nowS) {
    this.largestS = Math.max(this.largestS, audioS);
    if (this.firstAt === null) {
      this.firstAt = nowS;
      this.firstS = audioS;
    }
    this.lastAt = nowS;
    this.audioS += audioS;
  }

  /**
   * The rate (null before a second arrival; Infinity when all came at the same instant, faster than measurable).
   * @returns {number | null}
   */
  rate() {
    if (this.firstAt === null || this.lastAt === null || this.audioS === this.firstS) return null;
    const elapsed = this.lastAt - this.firstAt;
    return elapsed > 0 ? (this.audioS - this.firstS) / elapsed : Infinity;
  }
}

/** The start-up decision of one turn (or of one rebuffer): feed it arrivals until it says start. */
export class StartupBuffer {
  /** @param {StartupOptions} [options] */
  constructor(options = {}) {
    this.expectedS = options.expectedS ?? DEFAULT_EXPECTED_S;
    this.marginS = options.marginS ?? DEFAULT_MARGIN_S;
    this.maxWaitS = options.maxWaitS ?? DEFAULT_MAX_WAIT_S;
    this.chunkS = options.chunkS ?? 0;
    /** @type {number | null} */
    this.priorRate = options.priorRate ?? null;
    this._shared = options.arrivals !== undefined;
    this.arrivals = options.arrivals ?? new ArrivalRate();
    /** @type {number | null} wall time (s) of this buffer's first arrival */
    this.firstAt = null;
    /** Audio seconds that arrived into this buffer. */
    this.bufferedS = 0;
  }

  /**
   * The measured rate, else the prior (null: neither).
   * @returns {number | null}
   */
  rate() {
    return this.arrivals.rate() ?? this.priorRate;
  }

  /**
   * Wall time (s) after which playback starts whatever arrives (null before the first arrival).
   * @returns {number | null}
   */
  deadline() {
    return this.firstAt === null ? null : this.firstAt + this.maxWaitS;
  }

  /**
   * Record `audioS` seconds of audio arriving at wall time `nowS`, and decide. (With shared arrivals the owner
   * records them there first.)
   * @param {number} audioS
   * @param {number} nowS
   * @returns {StartupDecision}
   */
  arrive(audioS, nowS) {
    if (this.firstAt === null) this.firstAt = nowS;
    if (!this._shared) this.arrivals.add(audioS, nowS);
    this.bufferedS += audioS;
    return this.decide(nowS);
  }

  /**
   * The turn's expected length changed (its text grew): decide again with `expectedS` audio seconds in all.
   * @param {number} expectedS
   * @param {number} nowS
   * @returns {StartupDecision}
   */
  expect(expectedS, nowS) {
    this.expectedS = expectedS;
    return this.decide(nowS);
  }

  /**
   * Whether to start at wall time `nowS` with what has arrived.
   * @param {number} nowS
   * @returns {StartupDecision}
   */
  decide(nowS) {
    const rate = this.rate();
    if (this.priorRate === null || this.priorRate >= 1) {
      // no slow link known before this buffer: the first sound goes out at once
      return { start: this.firstAt !== null, rate, bufferedS: this.bufferedS, neededS: 0 };
    }
    const neededS = deficitS(rate, Math.max(0, this.expectedS - this.bufferedS));
    const due = this.firstAt !== null && nowS - this.firstAt >= this.maxWaitS;
    const marginS = this.marginS + Math.max(this.chunkS, this.arrivals.largestS);
    const enough = this.bufferedS >= this.expectedS || neededS === 0 || this.bufferedS >= neededS + marginS;
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
