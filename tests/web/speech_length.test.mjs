// The turn's length from its text (clients/js/src/speech_length.js): characters over characters per second, from the
// turn's own timed words once there are enough, else a prior (an earlier turn's, else the documented default).
import assert from "node:assert/strict";
import { test } from "node:test";

import { DEFAULT_CHARS_PER_S, MIN_MEASURED_S, SpeechLength } from "../../clients/js/src/speech_length.js";

test("length: unknown before any text; then the text read at the default characters per second", () => {
  const length = new SpeechLength();
  assert.equal(length.expectedS(), null);
  length.text("x".repeat(DEFAULT_CHARS_PER_S * 3));
  assert.equal(length.expectedS(), 3);
  length.text("x".repeat(DEFAULT_CHARS_PER_S * 9)); // more text: a longer reply
  assert.equal(length.expectedS(), 12);
});

test("length: never less than the audio already there", () => {
  const length = new SpeechLength();
  length.text("x".repeat(DEFAULT_CHARS_PER_S));
  length.audio(2.5);
  assert.equal(length.expectedS(), 2.5);
});

test("length: the turn's own timed words set its characters per second (replacements not counted twice)", () => {
  const length = new SpeechLength({ priorCharsPerS: 100 });
  length.text("Hello there, how are you doing today?");
  length.words([{ word: "Hello", end_s: 0.4 }]);
  assert.equal(length.charsPerS(), 100, `under ${MIN_MEASURED_S} s timed: the prior`);
  length.words([{ word: "there,", end_s: 0.8 }, { word: "how", end_s: 1.0 }]);
  length.words([{ word: "how", end_s: 0.95 }]); // a re-timed word: already counted
  assert.equal(length.timedChars, 6 + 7 + 4);
  assert.ok(Math.abs(length.charsPerS() - 17) < 1e-9);
  assert.ok(Math.abs(/** @type {number} */ (length.expectedS()) - 37 / 17) < 1e-9);
});

test("length: a complete turn's characters per second become the next turns' prior (null when too short)", () => {
  const length = new SpeechLength();
  length.text("x".repeat(30));
  length.audio(0.5);
  assert.equal(length.measuredCharsPerS(), null);
  length.audio(1.5);
  assert.equal(length.measuredCharsPerS(), 15);
  assert.equal(new SpeechLength({ priorCharsPerS: 15 }).charsPerS(), 15);
});
