/**
 * The language `value` names: a code ("en-us") or a voice letter ("a"), case-insensitively, `_` for `-`.
 * Returns null for a name of none (relay_core's parse_lang also takes espeak-ng names and a few aliases such as
 * "en"; this client accepts only codes and letters, so what it sends is always a code).
 * @param {string} value
 * @returns {Readonly<Language> | null}
 */
export function findLanguage(value: string): Readonly<Language> | null;
/**
 * The `lang` field to send for an option: the language's code, or null when the option is unset (null, undefined
 * or "": the voice's own language). Throws a TypeError naming the codes for anything else, before anything is sent.
 * @param {unknown} value
 * @returns {string | null}
 */
export function langField(value: unknown): string | null;
/**
 * The language of a Kokoro voice name (af_heart → American English), or null for a name that does not follow
 * Kokoro's `<letter><f|m>_<name>` pattern (a custom pack, a blend) — relay_core.languages.language_of_voice.
 * @param {string} name
 * @returns {Readonly<Language> | null}
 */
export function languageOfVoice(name: string): Readonly<Language> | null;
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
export const LANGUAGES: readonly Readonly<Language>[];
/** The codes, comma-separated, for messages (relay_core.languages.LANG_CODES). */
export const LANG_CODES: string;
/**
 * One of Kokoro's languages.
 */
export type Language = {
    /**
     * the wire value of `lang` ("en-us", "es", "zh" ...)
     */
    code: string;
    /**
     * the first letter of its voices' names ("a", "e", "z" ...)
     */
    letter: string;
    /**
     * in English, for people ("American English")
     */
    name: string;
};
