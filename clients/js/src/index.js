// @kokoro-relay/client: the Kokoro Relay gateway protocol (docs/client-protocol.md) for browsers, React Native and
// Node ≥ 20. No DOM, no required runtime dependency (opus.js imports the optional opus-decoder only where the platform
// has no Opus decoder); WebSocket and timers are the platform's or injected.

export { RelayClient, Turn, connect } from "./client.js";
export { Connection, DEFAULT_BACKOFF, MESSAGE_TOO_BIG, PROBE_MS, TOKEN_SKEW_MS, jwtExp, tokenExpiresWithin, withToken } from "./connection.js";
export { Emitter } from "./emitter.js";
export { LANGUAGES, LANG_CODES, findLanguage, langField, languageOfVoice } from "./languages.js";
export {
  AUDIO_CHOICES,
  OPUS_FORMAT,
  OpusStream,
  OpusWireError,
  PCM_FORMAT,
  WASM_DECODER_PACKAGE,
  base64Length,
  chooseAudio,
  chooseOpusDecoder,
  floatToInt16,
  splitPackets,
  wasmFactoryFrom,
  wasmOpusFactory,
  webCodecsOpusFactory,
} from "./opus.js";
export { PcmAssembler, PcmTimeline, SAMPLE_RATE, base64ToBytes, bytesToBase64, firstAudibleIndex, fnv1a, pcmSampleCount } from "./pcm.js";
export { PlatformError, platformDownlinkBps } from "./platform.js";
export {
  ClientSession,
  ClientTurn,
  LimitExceededError,
  MAX_PLAYED_MS,
  MAX_PROMPT_CHARS,
  MAX_SEND_BYTES,
  MAX_WORD_INDEX,
  STALL_RESUME_MS,
  TurnOutcome,
  TurnPhase,
  applyWords,
  newTurnId,
  opusChunkEvent,
  parseWordIndex,
  parseWords,
  playedMsField,
  utf8Length,
} from "./session.js";
export { PcmSink } from "./sink.js";
export { EMBEDDED_DEFAULT_VOICE, OFFICIAL_VOICES, PREFERRED_DEFAULT_VOICE, VOICE_GROUPS } from "./voices.js";
export { WebAudioSink } from "./web_audio_sink.js";
export { ArrivalRate, DEFAULT_EXPECTED_S, DEFAULT_MARGIN_S, DEFAULT_MAX_WAIT_S, StartupBuffer, deficitS } from "./startup_buffer.js";
export { DEFAULT_CHARS_PER_S, SpeechLength } from "./speech_length.js";
