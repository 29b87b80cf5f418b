// How long a turn's speech will be, estimated from its text: the reply's text arrives ahead of its audio (the agent
// streams the model's text at once and speaks it sentence by sentence), so its length in characters, divided by the
// voice's characters per second, says how much audio is still to come before it arrives. The start-up buffer
// (startup_buffer.js) sizes its wait from this estimate instead of assuming every reply is a sentence or two.
//
// Pure: the sink feeds it the text, the timed words (when the turn asked for timings) and the audio as they arrive.
// Characters per second, in order of preference: measured on this turn's own audio (its timed words: the characters
// of the words spoken up to the last word's end_s, once MIN_MEASURED_S of speech is timed), else the rate measured on
// an earlier complete turn (its text's characters over its audio's seconds: `priorCharsPerS`), else
// DEFAULT_CHARS_PER_S.

/**
 * Characters of written text (spaces and punctuation included) per second of Kokoro's speech at speed 1.0: the middle
 * of the 12-18 that the deployment's smoke test accepts for English (relay_functions.ops.smoke_audio). Languages
 * written more densely (Japanese, Mandarin) speak fewer characters per second: the estimate then runs long, which
 * only buffers more; the turns after the first measure their own.
 */
export const DEFAULT_CHARS_PER_S = 14;
/** Seconds of timed speech a turn needs before its own characters per second replace the prior. */
export const MIN_MEASURED_S = 1;
/** Seconds of audio a complete turn needs for its characters per second to become the next turns' prior. */
export const MIN_PRIOR_S = 1;

/** One turn's length estimate. */
export class SpeechLength {
  /** @param {{priorCharsPerS?: number | null}} [options] */
  constructor(options = {}) {
    this.priorCharsPerS = options.priorCharsPerS ?? DEFAULT_CHARS_PER_S;
    /** Characters of the reply's text so far. */
    this.chars = 0;
    /** Audio seconds that have arrived. */
    this.audioS = 0;
    /** Characters of the timed words so far (each word and the space after it). */
    this.timedChars = 0;
    /** end_s of the latest timed word (seconds on the turn's audio timeline). */
    this.timedS = 0;
  }

  /** @param {string} delta the next piece of the reply's text */
  text(delta) {
    this.chars += delta.length;
  }

  /** @param {number} seconds audio that arrived */
  audio(seconds) {
    this.audioS += seconds;
  }

  /**
   * The turn's next timed words (word_timings), in spoken order; a replacement (`index`) re-times words already
   * counted, so only words past the furthest end_s seen add characters.
   * @param {{word: string, end_s: number}[]} words
   */
  words(words) {
    for (const w of words) {
      if (w.end_s <= this.timedS) continue;
      this.timedChars += w.word.length + 1;
      this.timedS = w.end_s;
    }
  }

  /** Characters per second of this turn's speech: its own timed words, else the prior. */
  charsPerS() {
    return this.timedS >= MIN_MEASURED_S && this.timedChars > 0 ? this.timedChars / this.timedS : this.priorCharsPerS;
  }

  /**
   * Audio seconds the whole turn is expected to hold: the text so far read at charsPerS(), and never less than the
   * audio already there (null before any text: unknown).
   * @returns {number | null}
   */
  expectedS() {
    if (this.chars === 0) return null;
    return Math.max(this.audioS, this.chars / this.charsPerS());
  }

  /**
   * Characters per second measured over the whole turn, for the next turns' prior: call once its audio is complete
   * (null when too short to say).
   * @returns {number | null}
   */
  measuredCharsPerS() {
    return this.audioS >= MIN_PRIOR_S && this.chars > 0 ? this.chars / this.audioS : null;
  }
}
