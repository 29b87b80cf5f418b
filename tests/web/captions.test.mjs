// The caption track (web/captions.js): the word at a playback time, and the heard-word rule shared with the agent.
import assert from "node:assert/strict";
import { test } from "node:test";

import { CaptionTrack, alignToReply } from "../../web/captions.js";

const WORDS = [
  { word: "Hello,", start_s: 0.1, end_s: 0.5 },
  { word: "1,234", start_s: 0.6, end_s: 1.6 },
  { word: "words.", start_s: 1.6, end_s: 2.0 },
];

test("captions: the word spoken at each time, and the one to highlight in the gaps", () => {
  const track = new CaptionTrack();
  track.add(WORDS.slice(0, 1));
  track.add(WORDS.slice(1));
  const at = (t) => [track.wordAt(t), track.highlightAt(t)];
  assert.deepEqual(at(0.0), [-1, -1]);
  assert.deepEqual(at(0.1), [0, 0]);
  assert.deepEqual(at(0.55), [-1, 0]);
  assert.deepEqual(at(1.0), [1, 1]);
  assert.deepEqual(at(1.6), [2, 2]);
  assert.deepEqual(at(9), [-1, 2]);
});

test("captions: a word is heard once playback passed its midpoint (as the agent cuts its history)", () => {
  const track = new CaptionTrack();
  track.add(WORDS);
  assert.equal(track.heardCount(0.29), 0);
  assert.equal(track.heardCount(0.3), 1);
  assert.equal(track.heardCount(1.09), 1);
  assert.equal(track.heardCount(1.1), 2);
  assert.equal(track.heardCount(60), 3);
});

test("captions: words out of order or with bad times are refused", () => {
  const track = new CaptionTrack();
  track.add(WORDS);
  assert.throws(() => track.add([{ word: "late", start_s: 1.9, end_s: 2.5 }]), RangeError);
  assert.throws(() => track.add([{ word: "bad", start_s: 3, end_s: 2.5 }]), RangeError);
  assert.throws(() => track.add([{ word: "nan", start_s: NaN, end_s: 4 }]), RangeError);
  assert.equal(track.words.length, 3);
});

test("captions: a message with an index replaces the estimates from there on", () => {
  const track = new CaptionTrack();
  track.add([WORDS[0], { word: "1,234", start_s: 0.55, end_s: 1.5, final: false }, { word: "words.", start_s: 1.5, end_s: 1.9, final: false }]);
  assert.equal(track.wordAt(0.57), 1, "the estimate places the word before its final timing arrives");
  track.add(WORDS.slice(1), 1);
  assert.deepEqual(track.words, WORDS);
  assert.equal(track.wordAt(0.57), -1);
  track.add([{ word: "more", start_s: 2.1, end_s: 2.4 }], 99);
  assert.equal(track.words.length, 4, "an index past the words held appends");
});

test("captions: timed words find their rendered words in order, a dash joins the word before it", () => {
  const reply = ["Hello,", "sea", "—", "海.", "Bye."];
  const timed = [
    { word: "Hello,", start_s: 0, end_s: 0.3 },
    { word: "sea —", start_s: 0.4, end_s: 0.7 },
    { word: "海.", start_s: 0.8, end_s: 1.0 },
  ];
  const first = alignToReply(timed, reply);
  assert.deepEqual(first.spans, [[0, 0], [1, 2], [3, 3]]);
  assert.equal(first.next, 4);
  const later = alignToReply([{ word: "Bye.", start_s: 1.2, end_s: 1.5 }, { word: "gone", start_s: 1.6, end_s: 2 }], reply, first.next);
  assert.deepEqual(later.spans, [[4, 4], [5, 4]], "a word not rendered (yet) covers nothing");
  assert.equal(later.next, 5);
});
