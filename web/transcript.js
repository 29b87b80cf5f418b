// The streamed reply as words: text deltas cut anywhere (mid-word too) become a stable list of words, each
// with its index and character offset in the reply, so a view can render one element per word and a later
// caption feature can highlight word i while its audio plays.

/**
 * @typedef {{kind: "word", index: number, charOffset: number, text: string, extend: boolean}} WordOp
 *   a word's text: a new word (extend false) or more characters of the last word (extend true)
 * @typedef {{kind: "space", charOffset: number, text: string}} SpaceOp
 * @typedef {WordOp | SpaceOp} TranscriptOp
 */

const PIECES = /(\s+)/u;

export class WordStream {
  constructor() {
    this.text = "";
    this.wordCount = 0;
    this._lastWasWord = false;
  }

  /**
   * The operations that render one more delta.
   * @param {string} delta
   * @returns {TranscriptOp[]}
   */
  push(delta) {
    /** @type {TranscriptOp[]} */
    const ops = [];
    for (const piece of delta.split(PIECES)) {
      if (piece === "") continue;
      const charOffset = this.text.length;
      this.text += piece;
      if (/^\s+$/u.test(piece)) {
        ops.push({ kind: "space", charOffset, text: piece });
        this._lastWasWord = false;
      } else if (this._lastWasWord) {
        ops.push({ kind: "word", index: this.wordCount - 1, charOffset, text: piece, extend: true });
      } else {
        ops.push({ kind: "word", index: this.wordCount, charOffset, text: piece, extend: false });
        this.wordCount += 1;
        this._lastWasWord = true;
      }
    }
    return ops;
  }

  /** The words so far. */
  words() {
    return this.text.split(/\s+/u).filter((w) => w !== "");
  }
}
