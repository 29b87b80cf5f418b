// WordStream (web/transcript.js): deltas cut anywhere become stable words with indexes and offsets.
import assert from "node:assert/strict";
import { test } from "node:test";

import { WordStream } from "../../web/transcript.js";

/** Apply ops the way the page does, to a list of words. */
function render(deltas) {
  const stream = new WordStream();
  const words = [];
  for (const d of deltas) {
    for (const op of stream.push(d)) {
      if (op.kind !== "word") continue;
      if (op.extend) words[op.index].text += op.text;
      else words[op.index] = { text: op.text, charOffset: op.charOffset };
    }
  }
  return { stream, words };
}

test("transcript: a word split across deltas stays one word", () => {
  const { stream, words } = render(["Hel", "lo, wo", "rld!  How", " are", "", " you?"]);
  assert.deepEqual(words.map((w) => w.text), ["Hello,", "world!", "How", "are", "you?"]);
  assert.deepEqual(stream.words(), ["Hello,", "world!", "How", "are", "you?"]);
  assert.equal(stream.text, "Hello, world!  How are you?");
});

test("transcript: character offsets point at each word in the full text", () => {
  const { stream, words } = render(["  lead", "ing sp", "aces\nand ", "日本語 ok"]);
  for (const w of words) assert.equal(stream.text.slice(w.charOffset, w.charOffset + w.text.length), w.text);
  assert.equal(words.length, stream.wordCount);
});

test("transcript: whitespace-only deltas end the current word", () => {
  const { words } = render(["one", " ", "two"]);
  assert.deepEqual(words.map((w) => w.text), ["one", "two"]);
});
