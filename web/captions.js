// Word timings (docs/protocol.md, "Word timings") as a caption track: which word is being spoken at a playback
// time, and how many words a listener has heard (the agent's barge-in rule, relay_core.word_timings.words_heard:
// a word is heard once playback passed its midpoint). Pure: no DOM, no audio; the page asks it at each frame.

/**
 * @typedef {{word: string, start_s: number, end_s: number}} WordTiming
 */

export class CaptionTrack {
  constructor() {
    /** @type {WordTiming[]} */
    this.words = [];
  }

  /**
   * Append the words of one `word_timings` message (in spoken order, on the same timeline as the audio).
   * A word that would go back in time is refused, so the track stays sorted.
   * @param {WordTiming[]} words
   */
  add(words) {
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
