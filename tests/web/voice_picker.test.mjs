// The page's voice and language pickers (web/voice_picker.js), the parts that need no DOM: what a choice sends and
// how the choices read. The browser test (tests/web/test_web_browser.py) drives the selects themselves.
import assert from "node:assert/strict";
import { test } from "node:test";

import { LANGUAGES, OFFICIAL_VOICES } from "../../clients/js/src/index.js";
import { CUSTOM_VOICE, DEFAULT_VOICE_LABEL, chosenLang, chosenVoice, languageLabel, voiceLabel } from "../../web/voice_picker.js";

test("picker: the default sends no voice; a listed voice sends its name; Other… sends the typed name or blend", () => {
  assert.equal(chosenVoice("", "ignored"), null);
  assert.equal(chosenVoice("bf_emma", "ignored"), "bf_emma");
  assert.equal(chosenVoice(CUSTOM_VOICE, "  af_heart:0.7,af_bella:0.3 "), "af_heart:0.7,af_bella:0.3");
  assert.equal(chosenVoice(CUSTOM_VOICE, "   "), null, "an empty custom field is the server's default");
  assert.ok(!OFFICIAL_VOICES.some((v) => v.name === CUSTOM_VOICE), "the Other… value is no voice's name");
});

test("picker: the voice's own language sends no lang; a language sends its code", () => {
  assert.equal(chosenLang(""), null);
  assert.equal(chosenLang("pt-br"), "pt-br");
});

test("picker: labels say the default voices, each voice's gender and each language's code", () => {
  assert.equal(DEFAULT_VOICE_LABEL, "Server default (af_heart when installed, else jf_alpha)");
  assert.equal(voiceLabel({ name: "am_adam", gender: "male" }), "am_adam (male)");
  assert.deepEqual(LANGUAGES.map(languageLabel).slice(0, 3), ["American English (en-us)", "British English (en-gb)", "Spanish (es)"]);
});
