// Kokoro's official v1.0 voices (the 54 packs of hexgrad/Kokoro-82M, as pinned by the container's
// kokoro_server.engines.voice_packs.OFFICIAL_SHA256), grouped by language, so that an app can offer them. A
// deployment serves the ones installed in it (the five Japanese ones are always there); GET /v1/audio/voices on
// the container lists what it has. The Node tests compare this list with the container's.

import { LANGUAGES, languageOfVoice } from "./languages.js";

/**
 * One official voice.
 * @typedef {object} Voice
 * @property {string} name  what `voice` takes ("af_heart")
 * @property {"female" | "male"} gender  from the name's second letter
 * @property {string} lang  its language's code (from the name's first letter)
 */

/**
 * A language and its official voices, for a picker's group.
 * @typedef {object} VoiceGroup
 * @property {Readonly<import("./languages.js").Language>} language
 * @property {readonly Readonly<Voice>[]} voices  by name
 */

const NAMES = [
  "af_alloy", "af_aoede", "af_bella", "af_heart", "af_jessica", "af_kore", "af_nicole", "af_nova", "af_river",
  "af_sarah", "af_sky", "am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx", "am_puck",
  "am_santa", "bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel", "bm_fable", "bm_george", "bm_lewis",
  "ef_dora", "em_alex", "em_santa", "ff_siwis", "hf_alpha", "hf_beta", "hm_omega", "hm_psi", "if_sara", "im_nicola",
  "jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo", "pf_dora", "pm_alex", "pm_santa",
  "zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi", "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang",
];

/**
 * Every official voice, by name.
 * @type {readonly Readonly<Voice>[]}
 */
export const OFFICIAL_VOICES = Object.freeze(
  NAMES.map((name) => {
    const language = /** @type {Readonly<import("./languages.js").Language>} */ (languageOfVoice(name));
    /** @type {Voice} */
    const voice = { name, gender: name[1] === "f" ? "female" : "male", lang: language.code };
    return Object.freeze(voice);
  }),
);

/**
 * The official voices grouped by language, one group per language in Kokoro's order (LANGUAGES).
 * @type {readonly Readonly<VoiceGroup>[]}
 */
export const VOICE_GROUPS = Object.freeze(
  LANGUAGES.map((language) =>
    Object.freeze({ language, voices: Object.freeze(OFFICIAL_VOICES.filter((voice) => voice.lang === language.code)) }),
  ),
);

/** The voice the server speaks with when a request names none and it has the English packs installed. */
export const PREFERRED_DEFAULT_VOICE = "af_heart";

/** The voice the server speaks with when a request names none and only its embedded Japanese packs are there. */
export const EMBEDDED_DEFAULT_VOICE = "jf_alpha";
