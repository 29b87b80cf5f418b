// Word timings (docs/protocol.md, "Word timings") as a caption track: which word is being spoken at a playback
// time, and how many words a listener has heard (the agent's barge-in rule, relay_core.word_timings.words_heard:
// a word is heard once playback passed its midpoint). Pure: no DOM, no audio; the page asks it at each frame.

/**
 * @typedef {{word: string, start_s: number, end_s: number, final?: boolean}} WordTiming
 */

export class CaptionTrack {
  constructor() {
    /** @type {WordTiming[]} */
    this.words = [];
  }

  /**
   * Add the words of one `word_timings` message (in spoken order, on the same timeline as the audio): appended,
   * or, with `index`, replacing the words held from that position on (estimates made final). A word that would
   * go back in time is refused, so the track stays sorted.
   * @param {WordTiming[]} words
   * @param {number | null} [index]
   */
  add(words, index = null) {
    if (index !== null && index < this.words.length) this.words.length = index;
    for (const w of words) {
      const last = this.words[this.words.length - 1];
      if (!(Number.isFinite(w.start_s) && Number.isFinite(w.end_s) && w.start_s <= w.end_s)) {
        throw new RangeError(`word ${JSON.stringify(w.word)}: start_s and end_s must be finite, start_s <= end_s`);
      }
      if (last && w.start_s < last.end_s) {
        throw new RangeError(`word ${JSON.stringify(w.word)} starts before ${JSON.stringify(last.word)} ends`);
      }
      this.words.push(w);
    }
  }

  /**
   * The index of the word being spoken at `t` seconds (start_s <= t < end_s), or -1 between words.
   * @param {number} t
   */
  wordAt(t) {
    const i = this._lastStartingBy(t);
    return i >= 0 && t < this.words[i].end_s ? i : -1;
  }

  /**
   * The index of the word to highlight at `t`: the one being spoken, else the last one spoken (-1 before any).
   * @param {number} t
   */
  highlightAt(t) {
    return this._lastStartingBy(t);
  }

  /**
   * How many words a listener heard after `played_s` seconds of playback (a word counts once past its midpoint).
   * @param {number} played_s
   */
  heardCount(played_s) {
    let heard = 0;
    for (const w of this.words) {
      if ((w.start_s + w.end_s) / 2 > played_s) break;
      heard += 1;
    }
    return heard;
  }

  /** @param {number} t */
  _lastStartingBy(t) {
    let lo = 0;
    let hi = this.words.length; // first index whose start_s > t
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.words[mid].start_s <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }
}

/**
 * Where each timed word sits among the reply's rendered words (whitespace-separated, as transcript.js renders
 * them): a timed word is a written word of the reply, but a run of punctuation alone ("—") joins the word before
 * it, so one timed word may cover several rendered words. Words are matched in order from `from`; a timed word
 * not found within `lookahead` rendered words keeps the place after the previous one (its text may still be
 * arriving). Pure.
 * @param {WordTiming[]} words       timed words, in spoken order
 * @param {string[]} replyWords       the reply's rendered words so far
 * @param {number} [from]             the first rendered word not yet matched
 * @param {number} [lookahead]
 * @returns {{spans: Array<[number, number]>, next: number}} for each timed word its rendered words [first, last]
 *   (first > last: none found), and where the next match starts
 */
export function alignToReply(words, replyWords, from = 0, lookahead = 8) {
  /** @type {Array<[number, number]>} */
  const spans = [];
  let next = from;
  for (const w of words) {
    const pieces = w.word.split(/\s+/u).filter((p) => p !== "");
    let found = -1;
    for (let j = next; j < Math.min(replyWords.length, next + lookahead); j++) {
      if (replyWords[j] === pieces[0]) {
        found = j;
        break;
      }
    }
    if (found < 0) {
      spans.push([next, next - 1]);
      continue;
    }
    spans.push([found, found + pieces.length - 1]);
    next = found + pieces.length;
  }
  return { spans, next };
}
