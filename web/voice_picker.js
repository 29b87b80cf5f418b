// The Options' voice and language pickers. The voice select offers the server's default first, then Kokoro's
// official voices grouped by language (an <optgroup> per language, in Kokoro's order, from @kokoro-relay/client's
// VOICE_GROUPS: the one table of them), then "Other voice or blend…", which reveals a text field for any name
// the server knows (an installed custom pack, a blend such as "af_heart:0.7,af_bella:0.3"). The language select
// offers "the voice's own" and the nine languages. What they hold goes into every turn as `voice` and `lang`.

import { EMBEDDED_DEFAULT_VOICE, LANGUAGES, PREFERRED_DEFAULT_VOICE, VOICE_GROUPS } from "./client/index.js";

/** The voice select's value that reveals the text field. No voice is named so (names have no spaces). */
export const CUSTOM_VOICE = "other voice";

/** The label of the first voice choice: no `voice` sent, the server picks. */
export const DEFAULT_VOICE_LABEL = `Server default (${PREFERRED_DEFAULT_VOICE} when installed, else ${EMBEDDED_DEFAULT_VOICE})`;

/**
 * How a voice reads in the picker: its name (what the server logs and answers with) and its gender.
 * @param {{name: string, gender: string}} voice
 */
export function voiceLabel(voice) {
  return `${voice.name} (${voice.gender})`;
}

/**
 * How a language reads in the picker: "Spanish (es)".
 * @param {{name: string, code: string}} language
 */
export function languageLabel(language) {
  return `${language.name} (${language.code})`;
}

/**
 * The `voice` to send for the picker's state: null (the server's default) for the default choice or an empty
 * custom field, the custom field's text (trimmed) for "Other…", else the chosen name.
 * @param {string} choice the voice select's value
 * @param {string} custom the custom field's text
 * @returns {string | null}
 */
export function chosenVoice(choice, custom) {
  if (choice === CUSTOM_VOICE) return custom.trim() || null;
  return choice || null;
}

/**
 * The `lang` to send for the language select's value: null for "the voice's own".
 * @param {string} choice
 * @returns {string | null}
 */
export function chosenLang(choice) {
  return choice || null;
}

/** The voice and language pickers of the page (index.html's #voice, #voice-custom, #lang). */
export class SpeechPicker {
  /**
   * Fill the selects and follow the voice select (revealing the custom field for "Other…").
   * @param {{voice: HTMLSelectElement, custom: HTMLInputElement, customField: HTMLElement, lang: HTMLSelectElement}} elements
   */
  constructor(elements) {
    this.elements = elements;
    const { voice, lang } = elements;
    const doc = voice.ownerDocument;
    const first = voice.querySelector('option[value=""]');
    if (first !== null) first.textContent = DEFAULT_VOICE_LABEL;
    const other = voice.querySelector(`option[value="${CUSTOM_VOICE}"]`);
    for (const group of VOICE_GROUPS) {
      const optgroup = doc.createElement("optgroup");
      optgroup.label = group.language.name;
      optgroup.dataset.lang = group.language.code;
      for (const v of group.voices) optgroup.append(new Option(voiceLabel(v), v.name));
      voice.insertBefore(optgroup, other);
    }
    for (const language of LANGUAGES) lang.append(new Option(languageLabel(language), language.code));
    voice.addEventListener("change", () => this.showCustom());
    this.showCustom();
  }

  /** Show the custom voice field while "Other…" is chosen (a choice made before the page's script ran counts). */
  showCustom() {
    this.elements.customField.hidden = this.elements.voice.value !== CUSTOM_VOICE;
  }

  /** The turn's `voice` and `lang` as chosen now (null: the server's default voice, the voice's own language). */
  choice() {
    const { voice, custom, lang } = this.elements;
    return { voice: chosenVoice(voice.value, custom.value), lang: chosenLang(lang.value) };
  }
}
