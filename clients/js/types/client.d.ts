/**
 * Connect to the gateway. The socket opens at once; messages sent before it is open wait for it.
 * @param {ConnectOptions} options
 * @returns {RelayClient}
 */
export function connect(options: ConnectOptions): RelayClient;
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
export class Turn extends Emitter<TurnEvents> {
    /**
     * @param {TurnHost} host
     * @param {string} id
     * @param {import("./sink.js").AudioSink | null} sink
     * @param {{audio?: "pcm" | "opus", opusFactory?: import("./opus.js").OpusDecoderFactory | null}} [options]  what
     *   the turn asked for, and the decoder for Opus
     */
    constructor(host: TurnHost, id: string, sink: import("./sink.js").AudioSink | null, options?: {
        audio?: "pcm" | "opus";
        opusFactory?: import("./opus.js").OpusDecoderFactory | null;
    });
    id: string;
    _host: TurnHost;
    sink: import("./sink.js").AudioSink | null;
    text: string;
    samples: number;
    /** @type {"pcm" | "opus"} what this turn asked for */
    audio: "pcm" | "opus";
    /** @type {import("./opus.js").OpusDecoderFactory | null} */
    _opusFactory: import("./opus.js").OpusDecoderFactory | null;
    /** @type {OpusStream | null} the turn's Opus decoder (one per turn, kept across resumes) */
    _opus: OpusStream | null;
    /** @type {Promise<void> | null} events waiting behind an Opus chunk being decoded (order is kept) */
    _pending: Promise<void> | null;
    /** @type {TurnResult | null} */
    result: TurnResult | null;
    /** @type {Promise<TurnResult>} */
    done: Promise<TurnResult>;
    _resolve: (result: TurnResult) => void;
    /** The sink's playback events, handed on as this turn's until it ends. */
    _unlisten: (() => void)[];
    /** Whether the turn has ended (its `end` was emitted). */
    get finished(): boolean;
    /**
     * Stop the turn (barge-in): stop the sink at once and send `cancel` with how much of the audio was heard.
     * `playedMs` defaults to the sink's playedMs() (null: the agent remembers the whole reply). Also worth calling
     * after the turn's end while its audio still plays: the agent then cuts the reply it remembers.
     * @param {number | null} [playedMs]
     * @returns {number | null} the played_ms sent
     */
    cancel(playedMs?: number | null): number | null;
    /**
     * Apply the turn's next session event (ClientSession's, or an equivalent from another route), in order: behind an
     * Opus chunk still decoding, later events wait their turn.
     * @param {import("./session.js").ClientEvent} event
     */
    apply(event: import("./session.js").ClientEvent): void;
    /**
     * @param {import("./session.js").OpusReceived} event
     */
    _decodeOpus(event: import("./session.js").OpusReceived): Promise<void>;
    /**
     * @param {Int16Array} samples
     * @param {number} sampleOffset
     * @param {number} seq
     * @param {number} wireBytes  what the audio took on the wire (its base64)
     */
    _deliver(samples: Int16Array, sampleOffset: number, seq: number, wireBytes: number): void;
    /**
     * @param {import("./session.js").ClientEvent} event
     * @returns {void | Promise<void>}
     */
    _applyNow(event: import("./session.js").ClientEvent): void | Promise<void>;
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
export class RelayClient extends Emitter<ClientEvents> {
    /** @param {ConnectOptions} options */
    constructor(options: ConnectOptions);
    session: ClientSession;
    sink: import("./sink.js").AudioSink | null;
    /** @type {"pcm" | "opus"} what turns ask for by default */
    audio: "pcm" | "opus";
    /** @type {import("./opus.js").OpusDecoderFactory | null} the Opus decoder chosen (null: none, or not yet) */
    _opusFactory: import("./opus.js").OpusDecoderFactory | null;
    /** @type {AudioChoice} what turns ask for now (PCM until audioReady resolves) */
    audioChoice: AudioChoice;
    /**
     * Resolves once the client knows its audio format: Opus with the decoder found, or PCM and why. Turns sent
     * before it resolves ask for PCM (WebCodecs answers within milliseconds, before most sockets open).
     * @type {Promise<AudioChoice>}
     */
    audioReady: Promise<AudioChoice>;
    /** @type {TurnHost} how this client's turns report and cancel */
    _turnHost: TurnHost;
    /** @type {Map<string, Turn>} */
    turns: Map<string, Turn>;
    /** @type {{resolve: () => void, reject: (error: Error) => void}[]} the callers of newConversation() not answered yet */
    _conversationWaiters: {
        resolve: () => void;
        reject: (error: Error) => void;
    }[];
    connection: Connection;
    /** The connection's state: idle | connecting | open | reconnecting | closed. */
    get state(): import("./connection.js").ConnectionState;
    /**
     * Start a turn. One turn runs at a time per connection: send the next once this one's `end` came (or cancel
     * it first). Throws a TypeError for a blank prompt or a `lang` that is not one of Kokoro's languages. A prompt
     * over MAX_PROMPT_CHARS, or a message over `maxSendBytes` (32 KB of UTF-8), is not sent: the turn returned ends
     * at once (its `error` and `end` come right after send() returns) with code limit_exceeded.
     * @param {string} prompt
     * @param {SendOptions} [options]
     * @returns {Turn}
     */
    send(prompt: string, options?: SendOptions): Turn;
    /**
     * Start over: the user's next turns, on every connection of theirs, begin a conversation the agent has no history
     * of (a turn already running keeps its own). Resolves once the gateway answered `conversation_started`: send the
     * next turn after that (the gateway does not keep the order of two messages, so a turn sent at once could still
     * reach the old conversation). A connection lost before the answer sends it again on the next one; the promise
     * rejects with an Error carrying the gateway's `code` when it refuses.
     * @returns {Promise<void>}
     */
    newConversation(): Promise<void>;
    /** Counters for diagnostics and tests: drops, reconnects, stall resumes, token requests, dead sockets replaced,
     * sendMessages sent again after they were lost, turns ended because the gateway closed over their message (1009). */
    get stats(): {
        drops: number;
        reconnects: number;
        stallResumes: number;
        tokenRequests: number;
        deadSockets: number;
        resends: number;
        tooBig: number;
    };
    /** Dial now if not connected (send() also does). */
    connect(): void;
    /**
     * Call when the app comes back to the foreground, the page is shown again or the network is back: reconnects
     * at once instead of waiting for the backoff, or checks that the open socket still answers.
     */
    wake(): void;
    /**
     * Call when the platform reports the network gone (browser `offline`, NetInfo): the socket is dropped now and the
     * client retries with backoff; call wake() when the network is back.
     */
    networkLost(): void;
    /** Test hook: drop the socket as a network failure would (the client reconnects and resumes). */
    dropConnection(): void;
    /** Close for good: no reconnect. Unfinished turns stay unfinished. */
    close(): void;
    /**
     * Find an Opus decoder (the injected one, WebCodecs, the opus-decoder package): turns may ask for Opus one by one
     * even when the client's default is PCM.
     * @param {"pcm" | "opus"} audio
     * @param {import("./opus.js").OpusDecoderFactory | null} injected
     * @returns {Promise<AudioChoice>}
     */
    _chooseAudio(audio: "pcm" | "opus", injected: import("./opus.js").OpusDecoderFactory | null): Promise<AudioChoice>;
    /**
     * A turn refused before sending: it ends once the caller has had the chance to listen (a microtask later),
     * without a sink (stopping the client's sink would cut the previous reply still playing).
     * @param {string} turnId
     * @param {LimitExceededError} err
     */
    _refuse(turnId: string, err: LimitExceededError): Turn;
    /**
     * @param {string} turnId
     * @param {number | null} playedMs
     */
    _sendCancel(turnId: string, playedMs: number | null): void;
    /** @param {import("./session.js").ClientEvent} event */
    _onEvent(event: import("./session.js").ClientEvent): void;
}
export type ConnectOptions = {
    /**
     * the gateway's ws:// or wss:// URL (the token is added as ?token=)
     */
    url: string;
    /**
     * a JWT for the user; called again when it may have expired
     * or a handshake failed (refresh it there)
     */
    getToken: () => string | Promise<string>;
    /**
     * where every turn's audio goes (default: nowhere; listen to
     * `audio` events instead)
     */
    sink?: import("./sink.js").AudioSink | undefined;
    /**
     * needed where there is no global one
     */
    WebSocket?: import("./platform.js").WebSocketConstructor | undefined;
    timers?: import("./platform.js").Timers | undefined;
    backoff?: {
        baseMs?: number;
        maxMs?: number;
        maxAttempts?: number;
    } | undefined;
    stallMs?: number | null | undefined;
    probeMs?: number | undefined;
    /**
     * refresh a token whose exp is closer than this before a dial (default 10 s)
     */
    tokenSkewMs?: number | undefined;
    /**
     * the backoff's jitter source, in [0, 1) (default Math.random)
     */
    random?: (() => number) | undefined;
    /**
     * the largest message sent (default MAX_SEND_BYTES, one 32 KB gateway frame);
     * raise it only with a WebSocket that fragments messages into frames of at most 32 KB
     */
    maxSendBytes?: number | undefined;
    /**
     * how every turn's speech should travel (default "pcm"). "opus" is asked for
     * once a decoder is found (client.audioReady); where none works the turns ask for PCM and audioReady says why.
     * Sinks and `audio` events get PCM either way.
     */
    audio?: "opus" | "pcm" | undefined;
    /**
     * the Opus decoder to use (React Native:
     * wasmFactoryFrom(OpusDecoder) of the opus-decoder package); default: WebCodecs, else opus-decoder if installed
     */
    opusDecoder?: import("./opus.js").OpusDecoderFactory | null | undefined;
};
/**
 * What the client asks for, once its Opus decoder is chosen (client.audioReady).
 */
export type AudioChoice = import("./opus.js").AudioChoice;
/**
 * What a Turn needs from whatever carries it: the gateway's RelayClient, or another route to the agent (the web
 * page's direct route feeds a Turn the agent's own SSE events).
 */
export type TurnHost = {
    /**
     * something of the turn could not be applied (the app hears of it)
     */
    protocolError: (message: string) => void;
    /**
     * ask the server to stop the turn
     */
    cancel: (turnId: string, playedMs: number | null) => void;
};
export type SendOptions = {
    /**
     * a voice or blend (default: the deployment's)
     */
    voice?: string | null | undefined;
    /**
     * 0.25–4.0 (default 1.0)
     */
    speed?: number | undefined;
    /**
     * the language to read the reply in: one of the nine codes of LANGUAGES ("es",
     * "pt-br" ...) or a voice letter ("e"), any case (default: the voice's own); send() throws a TypeError for others
     */
    lang?: string | null | undefined;
    mode?: "bidi" | "batch" | undefined;
    /**
     * ask for word timings (`words` events)
     */
    timings?: boolean | undefined;
    /**
     * default: a fresh random one
     */
    turnId?: string | undefined;
    /**
     * this turn's sink (default: the client's)
     */
    sink?: import("./sink.js").AudioSink | null | undefined;
    /**
     * this turn's audio format (default: the client's); "opus" without a decoder
     * ready asks for PCM (turn.audio says what was asked)
     */
    audio?: "opus" | "pcm" | undefined;
};
/**
 * How a turn ended.
 */
export type TurnResult = {
    /**
     * completed | cancelled | failed | rejected | expired
     */
    outcome: string;
    /**
     * the error code when not completed/cancelled
     */
    code: string | null;
    message: string | null;
    /**
     * the reply's text received
     */
    text: string;
    /**
     * audio samples received
     */
    samples: number;
};
export type TurnEvents = {
    text: {
        text: string;
        seq: number;
    };
    audio: {
        samples: Int16Array;
        sampleOffset: number;
        seq: number;
    };
    words: {
        words: import("./session.js").WordTiming[];
        seq: number;
        index: number | null;
    };
    audioEnd: {
        totalSamples: number;
        durationS: number;
    };
    /**
     * the speech service is busy: the turn's speech waits in line (show "voice starting…" until audio)
     */
    speechWaiting: {
        position: number;
        seq: number;
    };
    error: {
        code: string;
        message: string;
        outcome: string;
    };
    end: TurnResult;
    /**
     * the sink's playback ran dry after it started
     */
    stall: import("./sink.js").PlaybackEvents["stall"];
    /**
     * the sink started playing after its start-up buffer
     */
    link: import("./sink.js").PlaybackEvents["link"];
};
export type ClientEvents = {
    state: {
        state: import("./connection.js").ConnectionState;
        detail: string;
    };
    rejected: {
        code: string;
        message: string;
        turnId: string | null;
    };
    protocolError: {
        message: string;
    };
    /**
     * the gateway started the fresh conversation newConversation() asked for
     */
    conversationStarted: {};
    /**
     * every session event (diagnostics)
     */
    event: import("./session.js").ClientEvent;
};
import { Emitter } from "./emitter.js";
import { OpusStream } from "./opus.js";
import { ClientSession } from "./session.js";
import { Connection } from "./connection.js";
import { LimitExceededError } from "./session.js";
