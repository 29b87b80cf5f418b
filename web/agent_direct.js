// Local mode: talk to the agent's own /invocations (ARCHITECTURE §3) and read its SSE stream directly,
// without the gateway. The body is decoded with SseDecoder (events reassembled across any chunking), PCM audio with
// PcmTimeline (samples reassembled across chunks and placed on the turn's timeline), Opus chunks with the library's
// opusChunkEvent; the events are the ClientEvents of @kokoro-relay/client's session.js, as in gateway mode.
//
// send() runs a turn through the library as the gateway route does: the same Opus negotiation (chooseAudio: Opus
// where this browser decodes it, the payload's "audio": "opus"), and a library Turn that decodes it and writes it,
// with the reply's text, to the same sink (its start-up buffer, stall and link events).

import { SseDecoder } from "./sse.js";
import { Turn } from "./client/client.js";
import { langField } from "./client/languages.js";
import { OPUS_FORMAT, chooseAudio } from "./client/opus.js";
import { PcmTimeline, base64ToBytes } from "./client/pcm.js";
import { opusChunkEvent, parseWordIndex, parseWords, playedMsField } from "./client/session.js";

/** The header that names an AgentCore conversation (relay_core.agent.events.AGENTCORE_SESSION_HEADER). */
export const AGENTCORE_SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id";

/** A random conversation id of 40 characters (AgentCore wants 33 to 256). */
export function newSessionId() {
  const bytes = new Uint8Array(20);
  crypto.getRandomValues(bytes);
  return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("").slice(0, 36);
}

/**
 * Turns agent events (parsed JSON objects) into page events. Pure: no I/O, unit-tested.
 */
export class AgentEventMapper {
  constructor() {
    this._audio = new PcmTimeline();
    /** @type {string} audio_stream_start's format: "pcm_s16le" or "opus" */
    this.format = "pcm_s16le";
    /** PCM-timeline samples of the Opus chunks mapped so far */
    this._opusSamples = 0;
    this.finished = false;
    this.wordMessages = 0;
  }

  /** Samples of the turn's audio mapped so far (on the PCM timeline, whatever the format). */
  get samples() {
    return this.format === OPUS_FORMAT ? this._opusSamples : this._audio.samples;
  }

  /**
   * @param {Record<string, any>} event one agent event
   * @returns {import("./client/session.js").ClientEvent[]}
   */
  map(event) {
    const turnId = String(event.request_id ?? "");
    switch (event.type) {
      case "agent_start":
        return [{ type: "turn_started", turnId, mode: String(event.mode ?? "bidi"), model: String(event.model ?? "") }];
      case "text_delta":
        return [{ type: "text_received", turnId, seq: Number(event.seq), text: String(event.text) }];
      case "audio_stream_start":
        this._audio.reset();
        this._opusSamples = 0;
        this.format = String(event.format ?? "pcm_s16le");
        if (this.format === OPUS_FORMAT && !(Number.isInteger(event.pre_skip) && event.pre_skip >= 0)) {
          return [{ type: "protocol_error", message: "the agent's Opus audio_stream_start has no valid pre_skip" }];
        }
        return [
          {
            type: "audio_started",
            turnId,
            voice: String(event.voice ?? ""),
            format: String(event.format ?? "pcm_s16le"),
            sampleRate: Number(event.sample_rate ?? 24000),
            channels: Number(event.channels ?? 1),
            preSkip: Number(event.pre_skip ?? 0),
            frameSamples: Number(event.frame_samples ?? 0),
          },
        ];
      case "audio_chunk": {
        if (this.format === OPUS_FORMAT) {
          // the agent's own wire has no sample_offset (its chunks tile the timeline in order; the gateway adds it)
          const placed = { ...event, sample_offset: event.sample_offset ?? this._opusSamples };
          const mapped = opusChunkEvent(turnId, placed, base64ToBytes(String(event.data)), this._opusSamples);
          if (mapped.type === "opus_received") this._opusSamples += mapped.sampleCount;
          return [mapped];
        }
        const { sampleOffset, samples } = this._audio.append(base64ToBytes(String(event.data)));
        return samples.length > 0 ? [{ type: "audio_received", turnId, seq: Number(event.seq), sampleOffset, samples }] : [];
      }
      case "word_timings": {
        // The agent's own event (times on the turn's audio timeline); it has no seq of its own.
        const words = parseWords(event.words);
        const index = parseWordIndex(event.index);
        if (words === null || index === undefined) {
          return [{ type: "protocol_error", message: "the agent sent malformed word_timings" }];
        }
        this.wordMessages += 1;
        return [{ type: "words_received", turnId, seq: this.wordMessages - 1, words, index }];
      }
      case "speech_waiting":
        // A status, not an error: the speech service is busy and the turn's speech waits in line ("voice
        // starting…" until audio). The agent's own event; it has no seq (at most one per turn, before any audio).
        return [{ type: "speech_waiting_received", turnId, seq: 0, position: Number(event.position ?? 1) }];
      case "audio_stream_end":
        return [{ type: "audio_ended", turnId, totalSamples: this.samples, durationS: Number(event.duration_s) }];
      case "agent_end":
        this.finished = true;
        return [ended(turnId, event.status === "cancelled" ? "cancelled" : "completed", null, null)];
      case "error":
        this.finished = true;
        return [ended(turnId, "failed", String(event.code), String(event.message))];
      default:
        return []; // newer agents may add events; ignore what this page does not know
    }
  }
}

/**
 * @param {string} turnId
 * @param {string} outcome
 * @param {string | null} code
 * @param {string | null} message
 * @returns {import("./client/session.js").ClientEvent}
 */
function ended(turnId, outcome, code, message) {
  return { type: "turn_ended", turnId, outcome, code, message };
}

/**
 * One conversation with the agent over HTTP: each turn is a POST whose SSE body streams the events.
 */
export class AgentDirectClient {
  /**
   * @param {{endpoint: string, onEvent?: (event: import("./client/session.js").ClientEvent) => void,
   *          fetchImpl?: typeof fetch, sink?: import("./client/sink.js").AudioSink | null, audio?: "pcm" | "opus",
   *          opusDecoder?: import("./client/opus.js").OpusDecoderFactory | null,
   *          onProtocolError?: (message: string) => void}} options
   *   onEvent: every event of every turn (diagnostics; send()'s Turn gets them too); sink: where send()'s turns play;
   *   audio: what they ask for (default "pcm"; "opus" once a decoder is found, as connect({audio}) does)
   */
  constructor(options) {
    this.endpoint = options.endpoint;
    this._onEvent = options.onEvent ?? null;
    this._fetch = options.fetchImpl ?? ((input, init) => fetch(input, init));
    this.sink = options.sink ?? null;
    this.sessionId = newSessionId();
    /** @type {string | null} */
    this.turnId = null;
    /** @type {AbortController | null} */
    this._abort = null;
    /** @type {Record<string, unknown>[]} every cancel request sent, in order (test hook) */
    this.sentCancels = [];
    /** @type {import("./client/opus.js").OpusDecoderFactory | null} */
    this._opusFactory = null;
    /** @type {import("./client/opus.js").AudioChoice} what turns ask for now (PCM until audioReady resolves) */
    this.audioChoice = { format: "pcm", decoder: null, reason: "choosing an Opus decoder" };
    /** Resolves once the client knows its audio format (the library's chooseAudio, as the gateway route's). */
    this.audioReady = chooseAudio(options.audio ?? "pcm", options.opusDecoder ?? null).then(({ choice, factory }) => {
      this._opusFactory = factory;
      this.audioChoice = choice;
      return choice;
    });
    const warn = options.onProtocolError ?? ((message) => console.warn("relay (direct):", message));
    /** @type {import("./client/client.js").TurnHost} */
    this._host = { protocolError: warn, cancel: (_turnId, playedMs) => void this.cancel(playedMs) };
    /** @type {Promise<void>} the latest turn's stream (resolves when it ends) */
    this.running = Promise.resolve();
  }

  /**
   * Start a turn, as RelayClient.send does: a library Turn whose events, decoded audio (written to the sink, which
   * begins its stream here) and end follow the agent's stream. Throws a TypeError for a language Kokoro does not speak.
   * @param {{prompt: string, mode?: string, voice?: string | null, speed?: number, lang?: string | null,
   *          turnId: string, timings?: boolean, audio?: "pcm" | "opus",
   *          sink?: import("./client/sink.js").AudioSink | null}} options
   * @returns {Turn}
   */
  send(options) {
    langField(options.lang); // a bad language throws here, before any request
    const wanted = options.audio ?? this.audioChoice.format;
    const audio = wanted === OPUS_FORMAT && this._opusFactory !== null ? OPUS_FORMAT : "pcm";
    const sink = options.sink === undefined ? this.sink : options.sink;
    const turn = new Turn(this._host, options.turnId, sink, { audio, opusFactory: this._opusFactory });
    sink?.begin?.(options.turnId);
    this.running = this.run({ ...options, audio }, (event) => turn.apply(event));
    return turn;
  }

  /**
   * Run one turn; resolves when its stream ends. `lang` (a code or voice letter; null: the voice's own) goes into
   * the payload as its code, as the gateway route sends it; a language Kokoro does not speak throws a TypeError
   * before any request. `audio: "opus"` asks the agent for Opus (map only: decoding is the Turn's, send()).
   * @param {{prompt: string, mode?: string, voice?: string | null, speed?: number, lang?: string | null,
   *          turnId: string, timings?: boolean, audio?: "pcm" | "opus"}} turn
   * @param {((event: import("./client/session.js").ClientEvent) => void) | null} [apply]  the turn's events go
   *   here too (send(): the library Turn)
   */
  async run(turn, apply = null) {
    const lang = langField(turn.lang);
    this.turnId = turn.turnId;
    const payload = { prompt: turn.prompt, mode: turn.mode ?? "bidi", request_id: turn.turnId };
    if (turn.timings) Object.assign(payload, { timings: true });
    if (turn.voice) Object.assign(payload, { voice: turn.voice });
    if (turn.speed !== undefined) Object.assign(payload, { speed: turn.speed });
    if (lang !== null) Object.assign(payload, { lang });
    if (turn.audio === OPUS_FORMAT) Object.assign(payload, { audio: OPUS_FORMAT });
    /** @param {import("./client/session.js").ClientEvent} event */
    const emit = (event) => {
      this._onEvent?.(event);
      if (event.type === "protocol_error") this._host.protocolError(`turn ${turn.turnId}: ${event.message}`);
      apply?.(event);
    };
    const abort = new AbortController();
    this._abort = abort;
    const mapper = new AgentEventMapper();
    const decoder = new SseDecoder();
    /** @param {{data: string}} sse */
    const handle = (sse) => {
      /** @type {Record<string, any>} */
      let event;
      try {
        event = JSON.parse(sse.data);
      } catch {
        emit(ended(turn.turnId, "failed", "invalid_json", "the agent sent an event that is not JSON"));
        return;
      }
      for (const out of mapper.map(event)) emit(out);
    };
    try {
      const response = await this._fetch(this.endpoint, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          [AGENTCORE_SESSION_HEADER]: this.sessionId,
        },
        body: JSON.stringify(payload),
        signal: abort.signal,
      });
      if (!response.ok || response.body === null) {
        const text = (await response.text()).slice(0, 300);
        emit(ended(turn.turnId, "failed", "agent_unavailable", `agent answered HTTP ${response.status}: ${text}`));
        return;
      }
      const reader = response.body.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const sse of decoder.feed(value)) handle(sse);
      }
      for (const sse of decoder.close()) handle(sse);
      if (!mapper.finished) {
        emit(ended(turn.turnId, "failed", "agent_unavailable", "the agent's stream ended before the turn did: send again"));
      }
    } catch (err) {
      if (abort.signal.aborted) {
        emit(ended(turn.turnId, "cancelled", null, null));
      } else {
        const message = err instanceof Error ? err.message : String(err);
        emit(ended(turn.turnId, "failed", "agent_unavailable", `could not reach the agent: ${message}`));
      }
    } finally {
      this._abort = null;
    }
  }

  /** Start over: later turns go to a fresh AgentCore session id, a conversation the agent has no history of. */
  newConversation() {
    this.sessionId = newSessionId();
  }

  /**
   * Ask the agent to cancel the running turn (it ends the stream with agent_end status cancelled).
   * `playedMs`: how many ms of the turn's audio the listener heard (the agent keeps only those words).
   * @param {number | null} [playedMs]
   */
  async cancel(playedMs = null) {
    if (this.turnId === null) return;
    /** @type {Record<string, unknown>} */
    const body = { action: "cancel", request_id: this.turnId };
    if (playedMs !== null) body.played_ms = playedMsField(playedMs);
    this.sentCancels.push(body);
    try {
      await this._fetch(this.endpoint, {
        method: "POST",
        headers: { "content-type": "application/json", [AGENTCORE_SESSION_HEADER]: this.sessionId },
        body: JSON.stringify(body),
      });
    } catch {
      this._abort?.abort(); // the agent is unreachable: at least stop reading
    }
  }
}
