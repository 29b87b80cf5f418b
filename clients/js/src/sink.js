// Where a turn's audio goes. The client calls begin(turnId) when a turn is sent, write(samples, sampleOffset, wireBytes)
// for every piece of audio in order (exactly once each, contiguous: sampleOffset is the sum of the samples before),
// text(delta) and words(words) as the reply's text and timings arrive (when the sink has them),
// arrived(sampleCount, wireBytes) when audio that must be decoded first arrives (Opus),
// end() when the turn's audio is complete, and stop() on a cancel or a failed turn. Turn.cancel() asks
// playedMs() how much the listener heard.

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
export class PcmSink {
  /**
   * @param {{onPcm: (samples: Int16Array, sampleOffset: number) => void, onStop?: () => void,
   *          onEnd?: () => void, playedMs?: () => number | null}} options
   */
  constructor(options) {
    if (typeof options?.onPcm !== "function") throw new TypeError("new PcmSink({onPcm}) needs a function that takes the samples");
    this._options = options;
    this.stopped = false;
    /** Samples handed on in the current stream. */
    this.samples = 0;
  }

  /** @param {string} _turnId */
  begin(_turnId) {
    this.stopped = false;
    this.samples = 0;
  }

  /**
   * @param {Int16Array} samples
   * @param {number} sampleOffset
   */
  write(samples, sampleOffset) {
    if (this.stopped) return;
    this.samples += samples.length;
    this._options.onPcm(samples, sampleOffset);
  }

  end() {
    this._options.onEnd?.();
  }

  stop() {
    if (this.stopped) return;
    this.stopped = true;
    this._options.onStop?.();
  }

  playedMs() {
    return this._options.playedMs?.() ?? null;
  }
}
