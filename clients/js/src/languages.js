// Kokoro's nine languages, the JS twin of relay_core.languages (same codes, letters, names and order; the Node
// tests read relay_core's table and compare). A request's `lang` names one of them and overrides the language of
// its voice (a voice's language is the first letter of its name: af_heart is American English).

/**
 * One of Kokoro's languages.
 * @typedef {object} Language
 * @property {string} code  the wire value of `lang` ("en-us", "es", "zh" ...)
 * @property {string} letter  the first letter of its voices' names ("a", "e", "z" ...)
 * @property {string} name  in English, for people ("American English")
 */

/**
 * Every language, in Kokoro's order (a b e f h i p j z), as relay_core.languages.LANGUAGES.
 * @type {readonly Readonly<Language>[]}
 */
export const LANGUAGES = Object.freeze(
  [
    { code: "en-us", letter: "a", name: "American English" },
    { code: "en-gb", letter: "b", name: "British English" },
    { code: "es", letter: "e", name: "Spanish" },
    { code: "fr", letter: "f", name: "French" },
    { code: "hi", letter: "h", name: "Hindi" },
    { code: "it", letter: "i", name: "Italian" },
    { code: "pt-br", letter: "p", name: "Brazilian Portuguese" },
    { code: "ja", letter: "j", name: "Japanese" },
    { code: "zh", letter: "z", name: "Mandarin Chinese" },
  ].map((language) => Object.freeze(language)),
);

/** The codes, comma-separated, for messages (relay_core.languages.LANG_CODES). */
export const LANG_CODES = LANGUAGES.map((language) => language.code).join(", ");

/**
 * The language `value` names: a code ("en-us") or a voice letter ("a"), case-insensitively, `_` for `-`.
 * Returns null for a name of none (relay_core's parse_lang also takes espeak-ng names and a few aliases such as
 * "en"; this client accepts only codes and letters, so what it sends is always a code).
 * @param {string} value
 * @returns {Readonly<Language> | null}
 */
export function findLanguage(value) {
  const key = value.trim().toLowerCase().replace(/_/g, "-");
  return LANGUAGES.find((language) => language.code === key || language.letter === key) ?? null;
}

/**
 * The `lang` field to send for an option: the language's code, or null when the option is unset (null, undefined
 * or "": the voice's own language). Throws a TypeError naming the codes for anything else, before anything is sent.
 * @param {unknown} value
 * @returns {string | null}
 */
export function langField(value) {
  if (value === undefined || value === null || value === "") return null;
  const found = typeof value === "string" ? findLanguage(value) : null;
  if (found === null) {
    const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 16)) : typeof value;
    throw new TypeError(
      `lang ${shown} is not one of Kokoro's languages: use one of ${LANG_CODES} (or a voice letter such as "a"), or leave it out to use the voice's language`,
    );
  }
  return found.code;
}

/**
 * The language of a Kokoro voice name (af_heart → American English), or null for a name that does not follow
 * Kokoro's `<letter><f|m>_<name>` pattern (a custom pack, a blend) — relay_core.languages.language_of_voice.
 * @param {string} name
 * @returns {Readonly<Language> | null}
 */
export function languageOfVoice(name) {
  if (name.length < 3 || name[2] !== "_" || !"fm".includes(name[1])) return null;
  const letter = name[0].toLowerCase();
  return LANGUAGES.find((language) => language.letter === letter) ?? null;
}
