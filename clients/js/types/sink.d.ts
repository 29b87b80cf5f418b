/**
 * @typedef {object} AudioSink
 * @property {(turnId: string) => void} [begin]  a new turn's audio starts (forget the previous stream)
 * @property {(samples: Int16Array, sampleOffset: number, wireBytes?: number) => void} write  PCM s16, 24 kHz, mono;
 *   `wireBytes`: what the audio took on the wire (base64 included), for a sink that measures its link
 * @property {(sampleCount: number, wireBytes?: number) => void} [arrived]  audio arrived on the wire now and will be
 *   written once decoded (Opus): a sink that measures its link times the arrival, not the write
 * @property {(text: string) => void} [text]  the reply's text as it arrives, ahead of its audio (a sink that buffers
 *   for a slow link estimates the turn's length from it: WebAudioSink)
 * @property {(words: import("./session.js").WordTiming[]) => void} [words]  the turn's timed words as they arrive
 * @property {() => void} [end]  the turn's audio is complete
 * @property {() => void} stop  stop playback now and drop the rest of this turn's audio
 * @property {() => number | null} playedMs  ms of the turn's audio actually played (null: unknown)
 * @property {<K extends keyof PlaybackEvents>(type: K, listener: (payload: PlaybackEvents[K]) => void) => () => void} [on]
 *   a sink that reports playback (WebAudioSink): the client hands its events on as the turn's
 */
/**
 * What a sink that plays the audio may report.
 * @typedef {object} PlaybackEvents
 * @property {{durationS: number, playedS: number, underruns: number}} stall  playback ran dry after it started:
 *   durationS of silence (until the late audio plays, after the rebuffer that follows a stall), at playedS seconds
 *   into the turn's audio; emitted when playback resumes
 * @property {{rate: number | null, slow: boolean, startupS: number, bufferedS: number}} link  playback started after
 *   the start-up buffer: the measured audio seconds per wall second (null: one chunk, no rate), whether that is
 *   below real time, the start-up wait (wall seconds since the first chunk) and the audio buffered then
 */
/**
 * The "give me PCM" sink: hands every piece of audio to a callback, for players that take buffers (a React
 * Native PCM player, a file writer, a WAV encoder). Audio written after stop() and before the next begin() is
 * dropped. playedMs comes from the player's own position when the app provides it.
 * @implements {AudioSink}
 */
export class PcmSink implements AudioSink {
    /**
     * @param {{onPcm: (samples: Int16Array, sampleOffset: number) => void, onStop?: () => void,
     *          onEnd?: () => void, playedMs?: () => number | null}} options
     */
    constructor(options: {
        onPcm: (samples: Int16Array, sampleOffset: number) => void;
        onStop?: () => void;
        onEnd?: () => void;
        playedMs?: () => number | null;
    });
    _options: {
        onPcm: (samples: Int16Array, sampleOffset: number) => void;
        onStop?: () => void;
        onEnd?: () => void;
        playedMs?: () => number | null;
    };
    stopped: boolean;
    /** Samples handed on in the current stream. */
    samples: number;
    /** @param {string} _turnId */
    begin(_turnId: string): void;
    /**
     * @param {Int16Array} samples
     * @param {number} sampleOffset
     */
    write(samples: Int16Array, sampleOffset: number): void;
    end(): void;
    stop(): void;
    playedMs(): number | null;
}
export type AudioSink = {
    /**
     * a new turn's audio starts (forget the previous stream)
     */
    begin?: ((turnId: string) => void) | undefined;
    /**
     * PCM s16, 24 kHz, mono;
     * `wireBytes`: what the audio took on the wire (base64 included), for a sink that measures its link
     */
    write: (samples: Int16Array, sampleOffset: number, wireBytes?: number) => void;
    /**
     * audio arrived on the wire now and will be
     * written once decoded (Opus): a sink that measures its link times the arrival, not the write
     */
    arrived?: ((sampleCount: number, wireBytes?: number) => void) | undefined;
    /**
     * the reply's text as it arrives, ahead of its audio (a sink that buffers
     * for a slow link estimates the turn's length from it: WebAudioSink)
     */
    text?: ((text: string) => void) | undefined;
    /**
     * the turn's timed words as they arrive
     */
    words?: ((words: import("./session.js").WordTiming[]) => void) | undefined;
    /**
     * the turn's audio is complete
     */
    end?: (() => void) | undefined;
    /**
     * stop playback now and drop the rest of this turn's audio
     */
    stop: () => void;
    /**
     * ms of the turn's audio actually played (null: unknown)
     */
    playedMs: () => number | null;
    /**
     * a sink that reports playback (WebAudioSink): the client hands its events on as the turn's
     */
    on?: (<K extends keyof PlaybackEvents>(type: K, listener: (payload: PlaybackEvents[K]) => void) => () => void) | undefined;
};
/**
 * What a sink that plays the audio may report.
 */
export type PlaybackEvents = {
    /**
     * playback ran dry after it started:
     * durationS of silence (until the late audio plays, after the rebuffer that follows a stall), at playedS seconds
     * into the turn's audio; emitted when playback resumes
     */
    stall: {
        durationS: number;
        playedS: number;
        underruns: number;
    };
    /**
     * playback started after
     * the start-up buffer: the measured audio seconds per wall second (null: one chunk, no rate), whether that is
     * below real time, the start-up wait (wall seconds since the first chunk) and the audio buffered then
     */
    link: {
        rate: number | null;
        slow: boolean;
        startupS: number;
        bufferedS: number;
    };
};
