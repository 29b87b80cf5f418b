/**
 * Every official voice, by name.
 * @type {readonly Readonly<Voice>[]}
 */
export const OFFICIAL_VOICES: readonly Readonly<Voice>[];
/**
 * The official voices grouped by language, one group per language in Kokoro's order (LANGUAGES).
 * @type {readonly Readonly<VoiceGroup>[]}
 */
export const VOICE_GROUPS: readonly Readonly<VoiceGroup>[];
/** The voice the server speaks with when a request names none and it has the English packs installed. */
export const PREFERRED_DEFAULT_VOICE: "af_heart";
/** The voice the server speaks with when a request names none and only its embedded Japanese packs are there. */
export const EMBEDDED_DEFAULT_VOICE: "jf_alpha";
/**
 * One official voice.
 */
export type Voice = {
    /**
     * what `voice` takes ("af_heart")
     */
    name: string;
    /**
     * from the name's second letter
     */
    gender: "female" | "male";
    /**
     * its language's code (from the name's first letter)
     */
    lang: string;
};
/**
 * A language and its official voices, for a picker's group.
 */
export type VoiceGroup = {
    language: Readonly<import("./languages.js").Language>;
    /**
     * by name
     */
    voices: readonly Readonly<Voice>[];
};
