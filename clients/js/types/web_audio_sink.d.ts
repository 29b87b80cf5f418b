/**
 * The part of an AudioBuffer the sink uses.
 * @typedef {{getChannelData: (channel: number) => Float32Array}} AudioBufferLike
 */
/**
 * The part of an AudioBufferSourceNode the sink uses.
 * @typedef {object} AudioSourceLike
 * @property {AudioBufferLike | null} buffer
 * @property {(destination: any) => void} connect
 * @property {() => void} disconnect
 * @property {(when?: number) => void} start
 * @property {(when?: number) => void} stop
 * @property {(() => void) | null} onended
 */
/**
 * The part of an AudioContext the sink uses (browsers' AudioContext, react-native-audio-api's AudioContext).
 * @typedef {object} AudioContextLike
 * @property {number} currentTime
 * @property {string} state
 * @property {unknown} destination
 * @property {() => Promise<void>} [resume]
 * @property {(channels: number, length: number, sampleRate: number) => AudioBufferLike} createBuffer
 * @property {() => AudioSourceLike} createBufferSource
 */
/** Seconds between "now" and the first buffer of a stream (and after an underrun). */
export const DEFAULT_LEAD_S: 0.08;
/**
 * @typedef {object} ScheduledBuffer
 * @property {number} start   context time (s) at which the buffer starts
 * @property {number} frames  samples in the buffer
 * @property {number} offset  index of its first sample in the stream
 * @property {boolean} afterUnderrun whether it was pushed later than the previous buffer's end
 * @property {number} at      context time when it was scheduled
 */
/** @typedef {import("./sink.js").AudioSink} AudioSink */
/** @typedef {import("./sink.js").PlaybackEvents} SinkEvents */
/**
 * @typedef {object} WebAudioSinkOptions
 * @property {number} [sampleRate]
 * @property {number} [leadS]
 * @property {(rate: number) => AudioContextLike} [createContext]  default `new AudioContext({sampleRate,
 *   latencyHint: "interactive"})` from the global scope
 * @property {import("./startup_buffer.js").StartupOptions | false} [startup]  the start-up buffer's settings;
 *   false: start every turn at its first chunk
 * @property {() => number} [clock]  wall clock in seconds (default performance.now() / 1000, else Date.now())
 * @property {import("./platform.js").Timers} [timers]  for the start-up wait's deadline (default the platform's)
 * @property {() => number | null} [downlinkBps]  the platform's downlink estimate in bits per second, the first
 *   turn's prior (default platformDownlinkBps: navigator.connection.downlink where there is one)
 */
/**
 * @implements {AudioSink}
 * @extends {Emitter<SinkEvents>}
 */
export class WebAudioSink extends Emitter<import("./sink.js").PlaybackEvents> implements AudioSink {
    /** @param {WebAudioSinkOptions} [options] */
    constructor(options?: WebAudioSinkOptions);
    sampleRate: number;
    leadS: number;
    _createContext: (rate: number) => AudioContextLike;
    _startupOptions: false | import("./startup_buffer.js").StartupOptions;
    _clock: () => number;
    _timers: import("./platform.js").Timers;
    _downlinkBps: () => number | null;
    /** @type {StartupBuffer | null} this turn's start-up (or rebuffer) decision (null: playing, or no start-up buffer) */
    _startup: StartupBuffer | null;
    /** @type {number | null} where the schedule ran dry when a rebuffer began (context time; null: no rebuffer) */
    _dryAt: number | null;
    /** @type {Int16Array[]} audio written while the start-up buffer fills */
    _pending: Int16Array[];
    /** @type {unknown} */
    _startTimer: unknown;
    /** @type {number | null} the arrival rate of the latest turn that measured one (audio s per wall s); before
     * any, the start-up option priorRate (an app that knows its link) */
    linkRate: number | null;
    /** @type {ArrivalRate | null} this turn's arrivals (null: no turn begun since the last measurement) */
    _arrivals: ArrivalRate | null;
    /** Samples announced by arrived() and not written yet (their arrival is already counted). */
    _announced: number;
    /** @type {{audioS: number, wireBytes: number} | null} this turn's first chunk with its bytes on the wire */
    _firstWire: {
        audioS: number;
        wireBytes: number;
    } | null;
    /** Audio seconds of the largest message of the latest turn (a message arrives whole: the start-up margin). */
    chunkS: number;
    /** @type {number | null} characters of text per second of speech measured on the latest complete turn */
    charsPerS: number | null;
    /** This turn's length, estimated from its text. */
    _length: SpeechLength;
    /** Whether this turn's audio is complete (end() was called). */
    _complete: boolean;
    /** Rebuffers this turn (each after a stall). */
    rebuffers: number;
    /** Stalls after the start of this turn's playback (underruns of audio written through write()). */
    stalls: number;
    /** @type {AudioContextLike | null} */
    context: AudioContextLike | null;
    /** @type {Set<AudioSourceLike>} */
    _sources: Set<AudioSourceLike>;
    _nextTime: number;
    stopped: boolean;
    /** @type {number | null} the stream's position when stop() was called (null while not stopped) */
    _stoppedAt: number | null;
    /** @type {ScheduledBuffer[]} */
    scheduled: ScheduledBuffer[];
    /** @type {Int16Array[]} */
    _samples: Int16Array[];
    sampleCount: number;
    digest: number;
    underruns: number;
    _resetRecord(): void;
    /** The context, created on first use (call from a tap or click handler so the browser lets it play). */
    ensureContext(): AudioContextLike;
    /**
     * Unlock audio on a phone: call inside the first tap's handler. Mobile browsers keep an AudioContext suspended
     * until a gesture resumes it and a sound starts; this resumes it and plays one silent sample.
     */
    unlock(): string;
    /**
     * @param {Int16Array} samples
     * @param {number} _sampleOffset contiguous by the client's guarantee: the schedule follows the order of writes
     * @param {number} [wireBytes] the bytes this audio took on the wire (the client passes them): with the platform's
     *   downlink estimate, the first turn's prior rate
     */
    write(samples: Int16Array, _sampleOffset: number, wireBytes?: number): void;
    /**
     * Audio of `sampleCount` samples arrived on the wire now, to be written once decoded (the client calls it for
     * Opus, whose decoding takes a while: the first packets of a turn wait for the decoder to start). The link is
     * measured from these times, not from the writes.
     * @param {number} sampleCount
     * @param {number} [wireBytes]
     */
    arrived(sampleCount: number, wireBytes?: number): void;
    /**
     * @param {number} sampleCount
     * @param {number | undefined} wireBytes
     * @param {number} now
     */
    _noteArrival(sampleCount: number, wireBytes: number | undefined, now: number): void;
    /**
     * The reply's text as it arrives (ahead of its audio): the turn's expected length follows it.
     * @param {string} delta
     */
    text(delta: string): void;
    /**
     * The turn's timed words as they arrive: the characters per second of its own speech.
     * @param {{word: string, end_s: number}[]} words
     */
    words(words: {
        word: string;
        end_s: number;
    }[]): void;
    /**
     * Audio seconds this turn is expected to hold in all: from its text, else the start-up option's expectedS, else
     * DEFAULT_EXPECTED_S. Once the audio has outgrown that (more text is still to come, or there is none), another
     * expectedS beyond what has arrived.
     */
    expectedS(): number;
    /** Audio seconds the waiting buffer still covers: the turn's expected length less what was scheduled before it. */
    _expectedRestS(): number;
    _expectChanged(): void;
    /**
     * The first turn's prior rate from the platform's downlink estimate and the first chunk's bytes per second of audio
     * (null: no estimate).
     * @param {number} audioS
     * @param {number} wireBytes
     */
    _downlinkRate(audioS: number, wireBytes: number): number | null;
    /** Whether playback started this turn and has run out of audio (the next audio would start after a gap). */
    _ranDry(): boolean;
    /** Playback ran dry: hold the rest of the turn until its measured rate says it plays through (one stall). */
    _beginRebuffer(): void;
    /** Keep the finished turn's arrival rate and characters per second for the next turn (as is when it had none). */
    _measureLink(): void;
    /** The turn's audio is complete: what waits in the start-up buffer plays now. */
    end(): void;
    /**
     * Schedule samples after the start, reporting a stall when the schedule had run dry.
     * @param {Int16Array} samples
     */
    _playNow(samples: Int16Array): void;
    /** Play everything buffered so far, gaplessly from now + lead, and report the link (or, after a rebuffer, the stall). */
    _startPlayback(): void;
    _armStartTimer(): void;
    _clearStartTimer(): void;
    /** Whether audio written this turn is waiting in the start-up buffer. */
    get buffering(): boolean;
    /** ms of the stream played by the schedule (playedSeconds), rounded. */
    playedMs(): number;
    /** Start a new stream (a new turn): forget the schedule record and accept audio again. */
    /** @param {string} [_turnId] */
    begin(_turnId?: string): void;
    /**
     * Schedule samples right after what is already scheduled. Returns the buffer's start time, or null
     * when the player was stopped (audio after a cancel is dropped).
     * @param {Int16Array} samples
     * @returns {number | null}
     */
    enqueue(samples: Int16Array): number | null;
    /**
     * Keep what was actually handed to Web Audio: the buffer's float samples, converted back to int16
     * (exact: every s16 value / 32768 is a float32).
     * @param {AudioBufferLike} buffer
     * @param {number} start
     * @param {boolean} afterUnderrun
     * @param {number} at
     */
    _record(buffer: AudioBufferLike, start: number, afterUnderrun: boolean, at: number): void;
    /** Stop playback at once: every scheduled source is stopped and later audio of this stream is dropped. */
    stop(): void;
    /**
     * How many seconds of this stream's audio have played, by the schedule (not the wall clock): the stream
     * position of the context's clock, where the stream's sample n sits at n / sampleRate s. It counts the
     * buffers whose start time the clock has passed, so time spent in an underrun does not count. Frozen at the
     * position of stop(). This is the turn's caption clock, and what a cancel's played_ms reports.
     * @param {number} [now] context time (default: the context's currentTime)
     */
    playedSeconds(now?: number): number;
    /** Whether audio is still playing or scheduled to play. */
    get playing(): boolean;
    /** Sources started and not yet ended or stopped. */
    get activeSources(): number;
    /** Context time at which everything scheduled so far ends. */
    get endTime(): number;
    /** Every sample scheduled in this stream, in order (test hook). */
    scheduledSamples(): Int16Array<ArrayBuffer>;
    /**
     * Scheduling faults: consecutive buffers that do not start exactly where the previous one ended, other
     * than after a counted underrun (test hook; empty when playback is gapless).
     * @param {number} [toleranceS]
     */
    scheduleGaps(toleranceS?: number): {
        index: number;
        expected: number;
        start: number;
    }[];
}
/**
 * The part of an AudioBuffer the sink uses.
 */
export type AudioBufferLike = {
    getChannelData: (channel: number) => Float32Array;
};
/**
 * The part of an AudioBufferSourceNode the sink uses.
 */
export type AudioSourceLike = {
    buffer: AudioBufferLike | null;
    connect: (destination: any) => void;
    disconnect: () => void;
    start: (when?: number) => void;
    stop: (when?: number) => void;
    onended: (() => void) | null;
};
/**
 * The part of an AudioContext the sink uses (browsers' AudioContext, react-native-audio-api's AudioContext).
 */
export type AudioContextLike = {
    currentTime: number;
    state: string;
    destination: unknown;
    resume?: (() => Promise<void>) | undefined;
    createBuffer: (channels: number, length: number, sampleRate: number) => AudioBufferLike;
    createBufferSource: () => AudioSourceLike;
};
export type ScheduledBuffer = {
    /**
     * context time (s) at which the buffer starts
     */
    start: number;
    /**
     * samples in the buffer
     */
    frames: number;
    /**
     * index of its first sample in the stream
     */
    offset: number;
    /**
     * whether it was pushed later than the previous buffer's end
     */
    afterUnderrun: boolean;
    /**
     * context time when it was scheduled
     */
    at: number;
};
export type AudioSink = import("./sink.js").AudioSink;
export type SinkEvents = import("./sink.js").PlaybackEvents;
export type WebAudioSinkOptions = {
    sampleRate?: number | undefined;
    leadS?: number | undefined;
    /**
     * default `new AudioContext({sampleRate,
     * latencyHint: "interactive"})` from the global scope
     */
    createContext?: ((rate: number) => AudioContextLike) | undefined;
    /**
     * the start-up buffer's settings;
     * false: start every turn at its first chunk
     */
    startup?: false | import("./startup_buffer.js").StartupOptions | undefined;
    /**
     * wall clock in seconds (default performance.now() / 1000, else Date.now())
     */
    clock?: (() => number) | undefined;
    /**
     * for the start-up wait's deadline (default the platform's)
     */
    timers?: import("./platform.js").Timers | undefined;
    /**
     * the platform's downlink estimate in bits per second, the first
     * turn's prior (default platformDownlinkBps: navigator.connection.downlink where there is one)
     */
    downlinkBps?: (() => number | null) | undefined;
};
import { Emitter } from "./emitter.js";
import { StartupBuffer } from "./startup_buffer.js";
import { ArrivalRate } from "./startup_buffer.js";
import { SpeechLength } from "./speech_length.js";
