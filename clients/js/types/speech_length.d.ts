/**
 * Characters of written text (spaces and punctuation included) per second of Kokoro's speech at speed 1.0: the middle
 * of the 12-18 that the deployment's smoke test accepts for English (relay_functions.ops.smoke_audio). Languages
 * written more densely (Japanese, Mandarin) speak fewer characters per second: the estimate then runs long, which
 * only buffers more; the turns after the first measure their own.
 */
export const DEFAULT_CHARS_PER_S: 14;
/** Seconds of timed speech a turn needs before its own characters per second replace the prior. */
export const MIN_MEASURED_S: 1;
/** Seconds of audio a complete turn needs for its characters per second to become the next turns' prior. */
export const MIN_PRIOR_S: 1;
/** One turn's length estimate. */
export class SpeechLength {
    /** @param {{priorCharsPerS?: number | null}} [options] */
    constructor(options?: {
        priorCharsPerS?: number | null;
    });
    priorCharsPerS: number;
    /** Characters of the reply's text so far. */
    chars: number;
    /** Audio seconds that have arrived. */
    audioS: number;
    /** Characters of the timed words so far (each word and the space after it). */
    timedChars: number;
    /** end_s of the latest timed word (seconds on the turn's audio timeline). */
    timedS: number;
    /** @param {string} delta the next piece of the reply's text */
    text(delta: string): void;
    /** @param {number} seconds audio that arrived */
    audio(seconds: number): void;
    /**
     * The turn's next timed words (word_timings), in spoken order; a replacement (`index`) re-times words already
     * counted, so only words past the furthest end_s seen add characters.
     * @param {{word: string, end_s: number}[]} words
     */
    words(words: {
        word: string;
        end_s: number;
    }[]): void;
    /** Characters per second of this turn's speech: its own timed words, else the prior. */
    charsPerS(): number;
    /**
     * Audio seconds the whole turn is expected to hold: the text so far read at charsPerS(), and never less than the
     * audio already there (null before any text: unknown).
     * @returns {number | null}
     */
    expectedS(): number | null;
    /**
     * Characters per second measured over the whole turn, for the next turns' prior: call once its audio is complete
     * (null when too short to say).
     * @returns {number | null}
     */
    measuredCharsPerS(): number | null;
}
