// The library's front door: connect({url, getToken}) → a RelayClient; client.send(prompt, options) → a Turn that
// emits the reply's text, audio and word timings in order, exactly once, through drops, reconnects and resumes.
//
// A Turn's events, in order: `text` and `words` and `audio` (interleaved as the gateway sent them), then
// `error` (only when the turn did not complete: failed, rejected, expired) and finally `end` (always, once).
// `turn.done` resolves with the same result as `end`; it never rejects. A message over the protocol's limits is
// never sent: its turn ends at once with `error` {code: "limit_exceeded", outcome: "rejected"} and `end`.

import { Connection } from "./connection.js";
import { Emitter } from "./emitter.js";
import { OPUS_FORMAT, OpusStream, base64Length, chooseAudio } from "./opus.js";
import { ClientSession, LimitExceededError, TurnOutcome, newTurnId } from "./session.js";

/**
 * @typedef {object} ConnectOptions
 * @property {string} url  the gateway's ws:// or wss:// URL (the token is added as ?token=)
 * @property {() => string | Promise<string>} getToken  a JWT for the user; called again when it may have expired
 *   or a handshake failed (refresh it there)
 * @property {import("./sink.js").AudioSink} [sink]  where every turn's audio goes (default: nowhere; listen to
 *   `audio` events instead)
 * @property {import("./platform.js").WebSocketConstructor} [WebSocket]  needed where there is no global one
 * @property {import("./platform.js").Timers} [timers]
 * @property {{baseMs?: number, maxMs?: number, maxAttempts?: number}} [backoff]
 * @property {number | null} [stallMs]
 * @property {number} [probeMs]
 * @property {number} [tokenSkewMs]  refresh a token whose exp is closer than this before a dial (default 10 s)
 * @property {() => number} [random]  the backoff's jitter source, in [0, 1) (default Math.random)
 * @property {number} [maxSendBytes]  the largest message sent (default MAX_SEND_BYTES, one 32 KB gateway frame);
 *   raise it only with a WebSocket that fragments messages into frames of at most 32 KB
 * @property {"pcm" | "opus"} [audio]  how every turn's speech should travel (default "pcm"). "opus" is asked for
 *   once a decoder is found (client.audioReady); where none works the turns ask for PCM and audioReady says why.
 *   Sinks and `audio` events get PCM either way.
 * @property {import("./opus.js").OpusDecoderFactory | null} [opusDecoder]  the Opus decoder to use (React Native:
 *   wasmFactoryFrom(OpusDecoder) of the opus-decoder package); default: WebCodecs, else opus-decoder if installed
 */

/**
 * What the client asks for, once its Opus decoder is chosen (client.audioReady).
 * @typedef {import("./opus.js").AudioChoice} AudioChoice
 */

/**
 * What a Turn needs from whatever carries it: the gateway's RelayClient, or another route to the agent (the web
 * page's direct route feeds a Turn the agent's own SSE events).
 * @typedef {object} TurnHost
 * @property {(message: string) => void} protocolError  something of the turn could not be applied (the app hears of it)
 * @property {(turnId: string, playedMs: number | null) => void} cancel  ask the server to stop the turn
 */

/**
 * @typedef {object} SendOptions
 * @property {string | null} [voice]  a voice or blend (default: the deployment's)
 * @property {number} [speed]   0.25–4.0 (default 1.0)
 * @property {string | null} [lang]  the language to read the reply in: one of the nine codes of LANGUAGES ("es",
 *   "pt-br" ...) or a voice letter ("e"), any case (default: the voice's own); send() throws a TypeError for others
 * @property {"bidi" | "batch"} [mode]
 * @property {boolean} [timings]  ask for word timings (`words` events)
 * @property {string} [turnId]  default: a fresh random one
 * @property {import("./sink.js").AudioSink | null} [sink]  this turn's sink (default: the client's)
 * @property {"pcm" | "opus"} [audio]  this turn's audio format (default: the client's); "opus" without a decoder
 *   ready asks for PCM (turn.audio says what was asked)
 */

/**
 * How a turn ended.
 * @typedef {object} TurnResult
 * @property {string} outcome  completed | cancelled | failed | rejected | expired
 * @property {string | null} code  the error code when not completed/cancelled
 * @property {string | null} message
 * @property {string} text  the reply's text received
 * @property {number} samples  audio samples received
 */

/**
 * @typedef {object} TurnEvents
 * @property {{text: string, seq: number}} text
 * @property {{samples: Int16Array, sampleOffset: number, seq: number}} audio
 * @property {{words: import("./session.js").WordTiming[], seq: number, index: number | null}} words
 * @property {{totalSamples: number, durationS: number}} audioEnd
 * @property {{position: number, seq: number}} speechWaiting  the speech service is busy: the turn's speech waits in line (show "voice starting…" until audio)
 * @property {{code: string, message: string, outcome: string}} error
 * @property {TurnResult} end
 * @property {import("./sink.js").PlaybackEvents["stall"]} stall  the sink's playback ran dry after it started
 * @property {import("./sink.js").PlaybackEvents["link"]} link  the sink started playing after its start-up buffer
 */

/**
 * A turn's events in order, its audio decoded and written to its sink (with the reply's text, so a sink can size its
 * start-up buffer). RelayClient.send() makes them; another route to the agent makes one with its own TurnHost and
 * feeds it the session's events (apply).
 * @extends {Emitter<TurnEvents>}
 */
export class Turn extends Emitter {
  /**
   * @param {TurnHost} host
   * @param {string} id
   * @param {import("./sink.js").AudioSink | null} sink
   * @param {{audio?: "pcm" | "opus", opusFactory?: import("./opus.js").OpusDecoderFactory | null}} [options]  what
   *   the turn asked for, and the decoder for Opus
   */
  constructor(host, id, sink, options = {}) {
    super();
    this.id = id;
    this._host = host;
    this.sink = sink;
    this.text = "";
    this.samples = 0;
    /** @type {"pcm" | "opus"} what this turn asked for */
    this.audio = options.audio ?? "pcm";
    /** @type {import("./opus.js").OpusDecoderFactory | null} */
    this._opusFactory = options.opusFactory ?? null;
    /** @type {OpusStream | null} the turn's Opus decoder (one per turn, kept across resumes) */
    this._opus = null;
    /** @type {Promise<void> | null} events waiting behind an Opus chunk being decoded (order is kept) */
    this._pending = null;
    /** @type {TurnResult | null} */
    this.result = null;
    /** @type {(result: TurnResult) => void} */
    let resolve = () => undefined;
    /** @type {Promise<TurnResult>} */
    this.done = new Promise((r) => (resolve = r));
    this._resolve = resolve;
    /** The sink's playback events, handed on as this turn's until it ends. */
    this._unlisten = sink?.on === undefined ? [] : [sink.on("stall", (e) => this.emit("stall", e)), sink.on("link", (e) => this.emit("link", e))];
  }

  /** Whether the turn has ended (its `end` was emitted). */
  get finished() {
    return this.result !== null;
  }

  /**
   * Stop the turn (barge-in): stop the sink at once and send `cancel` with how much of the audio was heard.
   * `playedMs` defaults to the sink's playedMs() (null: the agent remembers the whole reply). Also worth calling
   * after the turn's end while its audio still plays: the agent then cuts the reply it remembers.
   * @param {number | null} [playedMs]
   * @returns {number | null} the played_ms sent
   */
  cancel(playedMs) {
    const heard = playedMs ?? this.sink?.playedMs() ?? null;
    this.sink?.stop();
    if (this.finished && heard === null) return null; // nothing to tell the agent
    this._host.cancel(this.id, heard);
    return heard;
  }

  /**
   * Apply the turn's next session event (ClientSession's, or an equivalent from another route), in order: behind an
   * Opus chunk still decoding, later events wait their turn.
   * @param {import("./session.js").ClientEvent} event
   */
  apply(event) {
    // the sink measures the link from when audio arrives, not from when its decoding is done
    if (event.type === "opus_received") this.sink?.arrived?.(event.sampleCount, opusWireBytes(event.packets));
    if (this._pending === null && event.type !== "opus_received") {
      this._applyNow(event);
      return;
    }
    /** @type {Promise<void>} */
    const tail = (this._pending ?? Promise.resolve())
      .then(() => this._applyNow(event))
      .catch((err) => this._host.protocolError(`turn ${this.id}: ${err?.message ?? err}`))
      .then(() => {
        if (this._pending === tail) this._pending = null;
      });
    this._pending = tail;
  }

  /**
   * @param {import("./session.js").OpusReceived} event
   */
  async _decodeOpus(event) {
    let samples;
    try {
      if (this._opus === null) throw new Error("Opus audio without an Opus audio_stream_start");
      samples = await this._opus.decodeChunk({ packets: event.packets, sampleOffset: event.sampleOffset, samples: event.sampleCount });
    } catch (err) {
      // silence keeps the timeline (and played_ms) exact; the app hears of it
      samples = new Int16Array(event.sampleCount);
      this._host.protocolError(`turn ${this.id}: audio_chunk ${event.seq} did not decode (${/** @type {any} */ (err)?.message ?? err})`);
    }
    this._deliver(samples, event.sampleOffset, event.seq, opusWireBytes(event.packets));
  }

  /**
   * @param {Int16Array} samples
   * @param {number} sampleOffset
   * @param {number} seq
   * @param {number} wireBytes  what the audio took on the wire (its base64)
   */
  _deliver(samples, sampleOffset, seq, wireBytes) {
    this.samples += samples.length;
    this.sink?.write(samples, sampleOffset, wireBytes);
    this.emit("audio", { samples, sampleOffset, seq });
  }

  /**
   * @param {import("./session.js").ClientEvent} event
   * @returns {void | Promise<void>}
   */
  _applyNow(event) {
    switch (event.type) {
      case "text_received":
        this.text += event.text;
        this.sink?.text?.(event.text);
        this.emit("text", { text: event.text, seq: event.seq });
        break;
      case "audio_started":
        if (event.format === OPUS_FORMAT && this._opus === null) {
          if (this._opusFactory === null) {
            this._host.protocolError(`turn ${this.id}: Opus audio came but no decoder was chosen (ask with audio: "opus")`);
          } else {
            this._opus = new OpusStream({ factory: this._opusFactory, preSkip: event.preSkip, sampleRate: event.sampleRate, channels: event.channels });
          }
        }
        break;
      case "audio_received":
        this._deliver(event.samples, event.sampleOffset, event.seq, base64Length(event.samples.length * 2));
        break;
      case "opus_received":
        return this._decodeOpus(event);
      case "words_received":
        this.sink?.words?.(event.words);
        this.emit("words", { words: event.words, seq: event.seq, index: event.index });
        break;
      case "speech_waiting_received":
        this.emit("speechWaiting", { position: event.position, seq: event.seq });
        break;
      case "audio_ended":
        this._opus?.close();
        this.sink?.end?.();
        this.emit("audioEnd", { totalSamples: event.totalSamples, durationS: event.durationS });
        break;
      case "turn_ended": {
        this._opus?.close();
        const result = { outcome: event.outcome, code: event.code, message: event.message, text: this.text, samples: this.samples };
        this.result = result;
        if (event.outcome !== TurnOutcome.COMPLETED) {
          if (event.outcome !== TurnOutcome.CANCELLED) {
            this.emit("error", { code: event.code ?? "internal_error", message: event.message ?? "", outcome: event.outcome });
          }
          this.sink?.stop();
        }
        for (const unlisten of this._unlisten.splice(0)) unlisten();
        this.emit("end", result);
        this._resolve(result);
        break;
      }
      default:
        break;
    }
  }
}

/**
 * Bytes an Opus chunk's packets take on the wire (their base64).
 * @param {Uint8Array[]} packets
 */
function opusWireBytes(packets) {
  let bytes = 0;
  for (const packet of packets) bytes += packet.length;
  return base64Length(bytes);
}

/**
 * @typedef {object} ClientEvents
 * @property {{state: import("./connection.js").ConnectionState, detail: string}} state
 * @property {{code: string, message: string, turnId: string | null}} rejected
 * @property {{message: string}} protocolError
 * @property {{}} conversationStarted  the gateway started the fresh conversation newConversation() asked for
 * @property {import("./session.js").ClientEvent} event  every session event (diagnostics)
 */

/** @extends {Emitter<ClientEvents>} */
export class RelayClient extends Emitter {
  /** @param {ConnectOptions} options */
  constructor(options) {
    super();
    if (typeof options?.url !== "string" || !/^wss?:\/\//.test(options.url)) {
      throw new TypeError("connect({url}) needs the gateway's ws:// or wss:// URL");
    }
    if (typeof options.getToken !== "function") {
      throw new TypeError("connect({getToken}) needs a function that returns the user's JWT (or a promise of it)");
    }
    this.session = new ClientSession({ maxSendBytes: options.maxSendBytes });
    this.sink = options.sink ?? null;
    const audio = options.audio ?? "pcm";
    if (audio !== "pcm" && audio !== OPUS_FORMAT) throw new TypeError(`connect({audio}) is "pcm" or "opus", not ${JSON.stringify(audio)}`);
    /** @type {"pcm" | "opus"} what turns ask for by default */
    this.audio = audio;
    /** @type {import("./opus.js").OpusDecoderFactory | null} the Opus decoder chosen (null: none, or not yet) */
    this._opusFactory = null;
    /** @type {AudioChoice} what turns ask for now (PCM until audioReady resolves) */
    this.audioChoice = { format: "pcm", decoder: null, reason: "choosing an Opus decoder" };
    /**
     * Resolves once the client knows its audio format: Opus with the decoder found, or PCM and why. Turns sent
     * before it resolves ask for PCM (WebCodecs answers within milliseconds, before most sockets open).
     * @type {Promise<AudioChoice>}
     */
    this.audioReady = this._chooseAudio(audio, options.opusDecoder ?? null);
    /** @type {TurnHost} how this client's turns report and cancel */
    this._turnHost = {
      protocolError: (message) => this.emit("protocolError", { message }),
      cancel: (turnId, playedMs) => this._sendCancel(turnId, playedMs),
    };
    /** @type {Map<string, Turn>} */
    this.turns = new Map();
    /** @type {{resolve: () => void, reject: (error: Error) => void}[]} the callers of newConversation() not answered yet */
    this._conversationWaiters = [];
    this.connection = new Connection({
      url: options.url,
      getToken: options.getToken,
      session: this.session,
      onEvent: (event) => this._onEvent(event),
      onState: (state, detail) => this.emit("state", { state, detail }),
      WebSocket: options.WebSocket,
      timers: options.timers,
      backoff: options.backoff,
      stallMs: options.stallMs,
      probeMs: options.probeMs,
      random: options.random,
      tokenSkewMs: options.tokenSkewMs,
    });
  }

  /** The connection's state: idle | connecting | open | reconnecting | closed. */
  get state() {
    return this.connection.state;
  }

  /**
   * Start a turn. One turn runs at a time per connection: send the next once this one's `end` came (or cancel
   * it first). Throws a TypeError for a blank prompt or a `lang` that is not one of Kokoro's languages. A prompt
   * over MAX_PROMPT_CHARS, or a message over `maxSendBytes` (32 KB of UTF-8), is not sent: the turn returned ends
   * at once (its `error` and `end` come right after send() returns) with code limit_exceeded.
   * @param {string} prompt
   * @param {SendOptions} [options]
   * @returns {Turn}
   */
  send(prompt, options = {}) {
    if (typeof prompt !== "string" || prompt.trim() === "") throw new TypeError("send(prompt): the prompt must be a non-blank string");
    const turnId = options.turnId ?? newTurnId();
    const wanted = options.audio ?? this.audio;
    if (wanted !== "pcm" && wanted !== OPUS_FORMAT) throw new TypeError(`send(prompt, {audio}) is "pcm" or "opus", not ${JSON.stringify(wanted)}`);
    const audio = wanted === OPUS_FORMAT && this._opusFactory !== null ? OPUS_FORMAT : "pcm";
    let message;
    try {
      message = this.session.sendMessage({
        prompt,
        voice: options.voice ?? null,
        speed: options.speed,
        lang: options.lang,
        mode: options.mode,
        turnId,
        timings: options.timings,
        audio,
      });
    } catch (err) {
      if (err instanceof LimitExceededError) return this._refuse(turnId, err);
      throw err;
    }
    const sink = options.sink === undefined ? this.sink : options.sink;
    const turn = new Turn(this._turnHost, turnId, sink, { audio, opusFactory: this._opusFactory });
    this.turns.set(turnId, turn);
    sink?.begin?.(turnId);
    this.connection.send(message, turnId);
    return turn;
  }

  /**
   * Start over: the user's next turns, on every connection of theirs, begin a conversation the agent has no history
   * of (a turn already running keeps its own). Resolves once the gateway answered `conversation_started`: send the
   * next turn after that (the gateway does not keep the order of two messages, so a turn sent at once could still
   * reach the old conversation). A connection lost before the answer sends it again on the next one; the promise
   * rejects with an Error carrying the gateway's `code` when it refuses.
   * @returns {Promise<void>}
   */
  newConversation() {
    /** @type {Promise<void>} */
    const answered = new Promise((resolve, reject) => this._conversationWaiters.push({ resolve, reject }));
    this.connection.send(this.session.newConversation());
    return answered;
  }

  /** Counters for diagnostics and tests: drops, reconnects, stall resumes, token requests, dead sockets replaced,
   * sendMessages sent again after they were lost, turns ended because the gateway closed over their message (1009). */
  get stats() {
    const c = this.connection;
    return { drops: c.drops, reconnects: c.reconnects, stallResumes: c.stallResumes, tokenRequests: c.tokenRequests, deadSockets: c.deadSockets, resends: c.resends, tooBig: c.tooBig };
  }

  /** Dial now if not connected (send() also does). */
  connect() {
    this.connection.connect();
  }

  /**
   * Call when the app comes back to the foreground, the page is shown again or the network is back: reconnects
   * at once instead of waiting for the backoff, or checks that the open socket still answers.
   */
  wake() {
    this.connection.wake();
  }

  /**
   * Call when the platform reports the network gone (browser `offline`, NetInfo): the socket is dropped now and the
   * client retries with backoff; call wake() when the network is back.
   */
  networkLost() {
    this.connection.networkLost();
  }

  /** Test hook: drop the socket as a network failure would (the client reconnects and resumes). */
  dropConnection() {
    this.connection.dropConnection();
  }

  /** Close for good: no reconnect. Unfinished turns stay unfinished. */
  close() {
    this.connection.close();
  }

  /**
   * Find an Opus decoder (the injected one, WebCodecs, the opus-decoder package): turns may ask for Opus one by one
   * even when the client's default is PCM.
   * @param {"pcm" | "opus"} audio
   * @param {import("./opus.js").OpusDecoderFactory | null} injected
   * @returns {Promise<AudioChoice>}
   */
  async _chooseAudio(audio, injected) {
    const { choice, factory } = await chooseAudio(audio, injected);
    this._opusFactory = factory;
    this.audioChoice = choice;
    return choice;
  }

  /**
   * A turn refused before sending: it ends once the caller has had the chance to listen (a microtask later),
   * without a sink (stopping the client's sink would cut the previous reply still playing).
   * @param {string} turnId
   * @param {LimitExceededError} err
   */
  _refuse(turnId, err) {
    const turn = new Turn(this._turnHost, turnId, null);
    this.turns.set(turnId, turn);
    const outcome = TurnOutcome.REJECTED;
    void Promise.resolve().then(() => this._onEvent({ type: "turn_ended", turnId, outcome, code: err.code, message: err.message }));
    return turn;
  }

  /**
   * @param {string} turnId
   * @param {number | null} playedMs
   */
  _sendCancel(turnId, playedMs) {
    this.connection.send(this.session.cancel(turnId, playedMs));
  }

  /** @param {import("./session.js").ClientEvent} event */
  _onEvent(event) {
    this.emit("event", event);
    if (event.type === "rejected") this.emit("rejected", { code: event.code, message: event.message, turnId: event.turnId });
    if (event.type === "protocol_error") this.emit("protocolError", { message: event.message });
    if (event.type === "new_conversation_started") {
      for (const waiter of this._conversationWaiters.splice(0)) waiter.resolve();
      this.emit("conversationStarted", {});
    }
    // The library sends no other message without a turn id, so a rejection without one answers newConversation;
    // `unauthorized` is not an answer: the connection dials again with a fresh token and sends it again.
    if (event.type === "rejected" && event.turnId === null && event.code !== "unauthorized" && this.session.conversationPending) {
      this.session.conversationPending = false;
      const error = Object.assign(new Error(`newConversation was refused: ${event.message} (${event.code})`), { code: event.code });
      for (const waiter of this._conversationWaiters.splice(0)) waiter.reject(error);
    }
    if ("turnId" in event && event.turnId !== null) this.turns.get(event.turnId)?.apply(event);
  }
}

/**
 * Connect to the gateway. The socket opens at once; messages sent before it is open wait for it.
 * @param {ConnectOptions} options
 * @returns {RelayClient}
 */
export function connect(options) {
  const client = new RelayClient(options);
  client.connect();
  return client;
}
