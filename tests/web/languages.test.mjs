// @kokoro-relay/client's languages and voices (clients/js/src/languages.js, voices.js) against the Python that
// serves them: the nine languages of relay_core.languages (read from its source, in order) and the 54 official
// voices the container pins (kokoro_server.engines.voice_packs.OFFICIAL_SHA256); and the send options' `lang`: on
// the wire only when set, always as a code, refused before anything is sent when Kokoro does not speak it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  ClientSession,
  EMBEDDED_DEFAULT_VOICE,
  LANGUAGES,
  LANG_CODES,
  OFFICIAL_VOICES,
  PREFERRED_DEFAULT_VOICE,
  VOICE_GROUPS,
  connect,
  findLanguage,
  langField,
  languageOfVoice,
} from "../../clients/js/src/index.js";
import { FakeSocket, ManualTimers, flush } from "./fakes.mjs";

const REPO = new URL("../../", import.meta.url);
const LANGUAGES_PY = readFileSync(new URL("core/src/relay_core/languages.py", REPO), "utf8");
const VOICE_PACKS_PY = readFileSync(new URL("containers/kokoro/src/kokoro_server/engines/voice_packs.py", REPO), "utf8");

/** relay_core.languages.LANGUAGES as written in its source: [code, letter, name] per Language(...) line. */
function pythonLanguages() {
  const rows = [...LANGUAGES_PY.matchAll(/^\s+Language\("([^"]+)", "([^"]+)", "([^"]+)",/gm)].map((m) => m.slice(1, 4));
  assert.equal(rows.length, 9, "relay_core.languages.LANGUAGES is no longer written one Language(...) per line");
  return rows;
}

/** The keys of voice_packs.OFFICIAL_SHA256, in source order. */
function pythonOfficialVoices() {
  const block = VOICE_PACKS_PY.split("OFFICIAL_SHA256: Mapping[str, str] = {")[1]?.split("}")[0] ?? "";
  return [...block.matchAll(/^\s+"([a-z]{2}_[a-z]+)": "[0-9a-f]{64}",$/gm)].map((m) => m[1]);
}

test("languages: the nine of relay_core.languages, same codes, letters, names and order", () => {
  assert.deepEqual(
    LANGUAGES.map((l) => [l.code, l.letter, l.name]),
    pythonLanguages(),
  );
  assert.equal(LANG_CODES, "en-us, en-gb, es, fr, hi, it, pt-br, ja, zh");
  assert.ok(Object.isFrozen(LANGUAGES) && LANGUAGES.every((l) => Object.isFrozen(l)), "apps cannot change the table");
});

test("languages: a code or a voice letter in any case names a language; other spellings name none", () => {
  for (const language of LANGUAGES) {
    for (const spelling of [language.code, language.code.toUpperCase(), ` ${language.letter} `, language.letter.toUpperCase()]) {
      assert.equal(findLanguage(spelling), language, spelling);
    }
  }
  assert.equal(findLanguage("PT_BR")?.code, "pt-br");
  for (const none of ["", "en", "de", "english", "x", "en-us-x", "jp"]) assert.equal(findLanguage(none), null, none);
});

test("languages: a voice's language is its first letter, for Kokoro-style names only", () => {
  assert.equal(languageOfVoice("af_heart")?.code, "en-us");
  assert.equal(languageOfVoice("zm_yunxi")?.code, "zh");
  assert.equal(languageOfVoice("Bf_emma")?.code, "en-gb");
  for (const other of ["my_pack", "af", "axheart", "xf_anna", "af_heart:0.5,bf_emma:0.5".slice(0, 2)]) {
    assert.equal(languageOfVoice(other), null, other);
  }
});

test("voices: the 54 official voices the container pins, each once, grouped by language in Kokoro's order", () => {
  const names = pythonOfficialVoices();
  assert.equal(names.length, 54);
  assert.deepEqual(OFFICIAL_VOICES.map((v) => v.name), names);
  assert.deepEqual(VOICE_GROUPS.map((g) => g.language.code), LANGUAGES.map((l) => l.code));
  assert.deepEqual(VOICE_GROUPS.flatMap((g) => g.voices.map((v) => v.name)).sort(), [...names].sort());
  for (const group of VOICE_GROUPS) {
    assert.ok(group.voices.length > 0, `${group.language.name} has official voices`);
    for (const voice of group.voices) {
      assert.equal(voice.name[0], group.language.letter, voice.name);
      assert.equal(voice.lang, group.language.code);
      assert.equal(voice.gender, { f: "female", m: "male" }[voice.name[1]]);
    }
  }
  const byCode = Object.fromEntries(VOICE_GROUPS.map((g) => [g.language.code, g.voices.length]));
  assert.deepEqual(byCode, { "en-us": 20, "en-gb": 8, es: 3, fr: 1, hi: 4, it: 2, "pt-br": 3, ja: 5, zh: 8 });
});

test("voices: the default voices named are the container's preferred defaults, in its order", () => {
  const preferred = VOICE_PACKS_PY.match(/^PREFERRED_DEFAULT_VOICES = \("(\w+)", "(\w+)"\)$/m);
  assert.ok(preferred, "voice_packs.PREFERRED_DEFAULT_VOICES is no longer a pair of names");
  assert.deepEqual([PREFERRED_DEFAULT_VOICE, EMBEDDED_DEFAULT_VOICE], preferred.slice(1, 3));
});

test("lang: unset stays off the wire; a code or letter is sent as its code, after speed as relay_core writes it", () => {
  assert.equal(langField(undefined), null);
  assert.equal(langField(null), null);
  assert.equal(langField(""), null);
  assert.equal(langField("E"), "es");
  const session = new ClientSession();
  for (const lang of [undefined, null, ""]) {
    assert.equal("lang" in JSON.parse(session.sendMessage({ prompt: "hi", lang })), false, String(lang));
  }
  const message = JSON.parse(session.sendMessage({ prompt: "hola", voice: "ef_dora", lang: "ES", turnId: "t-es" }));
  assert.deepEqual(Object.entries(message), [
    ["action", "sendMessage"],
    ["prompt", "hola"],
    ["voice", "ef_dora"],
    ["speed", 1],
    ["lang", "es"],
    ["mode", "bidi"],
    ["turn_id", "t-es"],
  ]);
  assert.equal(JSON.parse(session.sendMessage({ prompt: "x", lang: "p" })).lang, "pt-br");
});

test("lang: a language Kokoro does not speak is a TypeError naming the codes, and the session records no turn", () => {
  const session = new ClientSession();
  for (const bad of ["de", "english", "en", " ", 7, true, {}]) {
    assert.throws(
      () => session.sendMessage({ prompt: "hi", lang: /** @type {any} */ (bad), turnId: "t-bad" }),
      (err) => err instanceof TypeError && err.message.includes(LANG_CODES),
      String(bad),
    );
  }
  assert.equal(session.turns.size, 0);
  assert.equal(session.currentTurnId, null);
  session.sendMessage({ prompt: "hi", turnId: "t-bad" }); // the refused id is still free
});

test("lang: client.send() puts lang on the wire, and refuses a bad one before anything is sent", async () => {
  FakeSocket.all = [];
  const relay = connect({ url: "ws://h/ws", getToken: () => "tok", WebSocket: /** @type {any} */ (FakeSocket), timers: new ManualTimers(), random: () => 0 });
  await flush();
  const socket = FakeSocket.all[0];
  socket.open();
  assert.throws(() => relay.send("hi", { lang: "klingon", turnId: "t-1" }), TypeError);
  assert.deepEqual(socket.sent, []);
  assert.equal(relay.turns.size, 0);
  relay.send("hi", { voice: "jm_kumo", lang: "en-US", turnId: "t-1" });
  relay.send("again", { turnId: "t-2" });
  const [first, second] = socket.sentJson();
  assert.equal(first.voice, "jm_kumo");
  assert.equal(first.lang, "en-us");
  assert.equal("lang" in second, false);
});
