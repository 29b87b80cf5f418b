// Gapless playback of streamed PCM with the Web Audio API: an AudioSink for browsers, and for React Native with
// react-native-audio-api (its AudioContext has the same createBuffer/createBufferSource: pass createContext).
// It needs no DOM types: the context is described structurally below.
//
// Each batch of samples becomes one AudioBuffer scheduled to start exactly where the previous one ends
// (sample-accurate on a context running at the stream's own 24 kHz rate). If the network falls behind
// playback (an underrun), the next buffer starts a short lead after "now" and the underrun is counted:
// audio is late, never lost or reordered, and a `stall` event says for how long the audio stopped.
//
// Audio written through the AudioSink interface (write) goes through a start-up buffer chosen from the link
// (startup_buffer.js): the sink measures each turn's arrival rate (audio seconds per wall second, first to last
// arrival) and hands it to the next turn. The turn's length comes from its text (text(), words(): speech_length.js),
// which arrives ahead of its audio. With no slow link known, playback starts at the first chunk (the first sound never
// waits for a measurement); a slow link is known from the turn before, or on a first turn from the platform's
// downlink estimate (navigator.connection.downlink, set against the first chunk's bytes on the wire per second of
// audio). Then a turn waits until enough audio has arrived to play the rest of it without stalling (at most
// maxWaitS). If playback runs dry anyway (a first turn on a slow link the platform did not report), the sink rebuffers
// once, by what the turn's measured rate implies for the rest of it, and plays through: one stall, not one per
// message. A `link` event reports the rate at the start, a `stall` event each stall when playback resumes.
// enqueue() schedules at once, with no start-up buffer (a caller that times its own audio). The player also keeps
// a record of everything it scheduled (samples read back from the AudioBuffers, start times) so a test can compare
// it with what the server sent.

import { Emitter } from "./emitter.js";
import { SAMPLE_RATE, fnv1a } from "./pcm.js";
import { platformDownlinkBps, timersImpl } from "./platform.js";
import { SpeechLength } from "./speech_length.js";
import { ArrivalRate, DEFAULT_EXPECTED_S, StartupBuffer } from "./startup_buffer.js";

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
export const DEFAULT_LEAD_S = 0.08;

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
export class WebAudioSink extends Emitter {
  /** @param {WebAudioSinkOptions} [options] */
  constructor(options = {}) {
    super();
    this.sampleRate = options.sampleRate ?? SAMPLE_RATE;
    this.leadS = options.leadS ?? DEFAULT_LEAD_S;
    this._createContext = options.createContext ?? defaultContext;
    this._startupOptions = options.startup ?? {};
    this._clock = options.clock ?? defaultClock();
    this._timers = timersImpl(options.timers);
    this._downlinkBps = options.downlinkBps ?? platformDownlinkBps;
    /** @type {StartupBuffer | null} this turn's start-up (or rebuffer) decision (null: playing, or no start-up buffer) */
    this._startup = null;
    /** @type {number | null} where the schedule ran dry when a rebuffer began (context time; null: no rebuffer) */
    this._dryAt = null;
    /** @type {Int16Array[]} audio written while the start-up buffer fills */
    this._pending = [];
    /** @type {unknown} */
    this._startTimer = null;
    /** @type {number | null} the arrival rate of the latest turn that measured one (audio s per wall s); before
     * any, the start-up option priorRate (an app that knows its link) */
    this.linkRate = (options.startup || null)?.priorRate ?? null;
    /** @type {ArrivalRate | null} this turn's arrivals (null: no turn begun since the last measurement) */
    this._arrivals = null;
    /** Samples announced by arrived() and not written yet (their arrival is already counted). */
    this._announced = 0;
    /** @type {{audioS: number, wireBytes: number} | null} this turn's first chunk with its bytes on the wire */
    this._firstWire = null;
    /** Audio seconds of the largest message of the latest turn (a message arrives whole: the start-up margin). */
    this.chunkS = 0;
    /** @type {number | null} characters of text per second of speech measured on the latest complete turn */
    this.charsPerS = null;
    /** This turn's length, estimated from its text. */
    this._length = new SpeechLength();
    /** Whether this turn's audio is complete (end() was called). */
    this._complete = false;
    /** Rebuffers this turn (each after a stall). */
    this.rebuffers = 0;
    /** Stalls after the start of this turn's playback (underruns of audio written through write()). */
    this.stalls = 0;
    /** @type {AudioContextLike | null} */
    this.context = null;
    /** @type {Set<AudioSourceLike>} */
    this._sources = new Set();
    this._nextTime = 0;
    this.stopped = false;
    /** @type {number | null} the stream's position when stop() was called (null while not stopped) */
    this._stoppedAt = null;
    /** @type {ScheduledBuffer[]} */
    this.scheduled = [];
    /** @type {Int16Array[]} */
    this._samples = [];
    this.sampleCount = 0;
    this.digest = fnv1a(new Int16Array(0));
    this.underruns = 0;
  }

  _resetRecord() {
    this.scheduled = [];
    this._samples = [];
    this.sampleCount = 0;
    this.digest = fnv1a(new Int16Array(0));
    this.underruns = 0;
    this.stalls = 0;
  }

  /** The context, created on first use (call from a tap or click handler so the browser lets it play). */
  ensureContext() {
    if (this.context === null) this.context = this._createContext(this.sampleRate);
    const ctx = this.context;
    if (ctx.state === "suspended" && typeof ctx.resume === "function") ctx.resume().catch(() => undefined);
    return ctx;
  }

  /**
   * Unlock audio on a phone: call inside the first tap's handler. Mobile browsers keep an AudioContext suspended
   * until a gesture resumes it and a sound starts; this resumes it and plays one silent sample.
   */
  unlock() {
    const ctx = this.ensureContext();
    const source = ctx.createBufferSource();
    source.buffer = ctx.createBuffer(1, 1, this.sampleRate);
    source.connect(ctx.destination);
    source.start(0);
    return ctx.state;
  }

  // ---- AudioSink ----

  /**
   * @param {Int16Array} samples
   * @param {number} _sampleOffset contiguous by the client's guarantee: the schedule follows the order of writes
   * @param {number} [wireBytes] the bytes this audio took on the wire (the client passes them): with the platform's
   *   downlink estimate, the first turn's prior rate
   */
  write(samples, _sampleOffset, wireBytes) {
    if (this.stopped || samples.length === 0) return;
    const audioS = samples.length / this.sampleRate;
    const now = this._clock();
    const announced = Math.min(this._announced, samples.length);
    this._announced -= announced;
    if (announced < samples.length) this._noteArrival(samples.length - announced, wireBytes, now);
    this._length.audio(audioS);
    if (this._startup === null && this._startupOptions !== false && this._ranDry()) this._beginRebuffer();
    if (this._startup === null) {
      this._playNow(samples);
      return;
    }
    if (this._startup.firstAt === null && this._startup.priorRate === null && this._firstWire !== null) {
      this._startup.priorRate = this._downlinkRate(this._firstWire.audioS, this._firstWire.wireBytes);
    }
    this._pending.push(samples);
    const decision = this._startup.arrive(audioS, now);
    if (decision.start) this._startPlayback();
    else this._armStartTimer();
  }

  /**
   * Audio of `sampleCount` samples arrived on the wire now, to be written once decoded (the client calls it for
   * Opus, whose decoding takes a while: the first packets of a turn wait for the decoder to start). The link is
   * measured from these times, not from the writes.
   * @param {number} sampleCount
   * @param {number} [wireBytes]
   */
  arrived(sampleCount, wireBytes) {
    if (this.stopped || sampleCount <= 0) return;
    this._noteArrival(sampleCount, wireBytes, this._clock());
    this._announced += sampleCount;
  }

  /**
   * @param {number} sampleCount
   * @param {number | undefined} wireBytes
   * @param {number} now
   */
  _noteArrival(sampleCount, wireBytes, now) {
    const audioS = sampleCount / this.sampleRate;
    this._arrivals ??= new ArrivalRate();
    this._arrivals.add(audioS, now);
    if (this._firstWire === null && wireBytes !== undefined && wireBytes > 0) this._firstWire = { audioS, wireBytes };
  }

  /**
   * The reply's text as it arrives (ahead of its audio): the turn's expected length follows it.
   * @param {string} delta
   */
  text(delta) {
    if (this.stopped || delta === "") return;
    this._length.text(delta);
    this._expectChanged();
  }

  /**
   * The turn's timed words as they arrive: the characters per second of its own speech.
   * @param {{word: string, end_s: number}[]} words
   */
  words(words) {
    if (this.stopped) return;
    this._length.words(words);
    this._expectChanged();
  }

  /**
   * Audio seconds this turn is expected to hold in all: from its text, else the start-up option's expectedS, else
   * DEFAULT_EXPECTED_S. Once the audio has outgrown that (more text is still to come, or there is none), another
   * expectedS beyond what has arrived.
   */
  expectedS() {
    const fallback = (this._startupOptions || {}).expectedS ?? DEFAULT_EXPECTED_S;
    const estimate = this._length.expectedS() ?? fallback;
    const arrived = this._length.audioS;
    return arrived > 0 && arrived >= estimate ? arrived + fallback : estimate;
  }

  /** Audio seconds the waiting buffer still covers: the turn's expected length less what was scheduled before it. */
  _expectedRestS() {
    return Math.max(0, this.expectedS() - this.sampleCount / this.sampleRate);
  }

  _expectChanged() {
    if (this._startup === null) return;
    const decision = this._startup.expect(this._expectedRestS(), this._clock());
    if (decision.start && this._pending.length > 0) this._startPlayback();
  }

  /**
   * The first turn's prior rate from the platform's downlink estimate and the first chunk's bytes per second of audio
   * (null: no estimate).
   * @param {number} audioS
   * @param {number} wireBytes
   */
  _downlinkRate(audioS, wireBytes) {
    const bps = this._downlinkBps();
    return bps === null ? null : bps / 8 / (wireBytes / audioS);
  }

  /** Whether playback started this turn and has run out of audio (the next audio would start after a gap). */
  _ranDry() {
    return this.context !== null && this.scheduled.length > 0 && this._nextTime < this.context.currentTime;
  }

  /** Playback ran dry: hold the rest of the turn until its measured rate says it plays through (one stall). */
  _beginRebuffer() {
    const arrivals = /** @type {ArrivalRate} */ (this._arrivals);
    this._dryAt = this._nextTime;
    this.rebuffers += 1;
    this._startup = new StartupBuffer({
      ...(this._startupOptions || {}),
      expectedS: this._expectedRestS(),
      priorRate: arrivals.rate(),
      arrivals,
    });
  }

  /** Keep the finished turn's arrival rate and characters per second for the next turn (as is when it had none). */
  _measureLink() {
    const rate = this._arrivals?.rate() ?? null;
    if ((this._arrivals?.largestS ?? 0) > 0) this.chunkS = /** @type {ArrivalRate} */ (this._arrivals).largestS;
    this._arrivals = null;
    if (rate !== null) this.linkRate = rate;
    const charsPerS = this._complete ? this._length.measuredCharsPerS() : null;
    if (charsPerS !== null) this.charsPerS = charsPerS;
  }

  /** The turn's audio is complete: what waits in the start-up buffer plays now. */
  end() {
    this._complete = true;
    if (this._startup !== null && this._pending.length > 0) this._startPlayback();
  }

  /**
   * Schedule samples after the start, reporting a stall when the schedule had run dry.
   * @param {Int16Array} samples
   */
  _playNow(samples) {
    const before = this.underruns;
    const dryAt = this._nextTime;
    const start = this.enqueue(samples);
    if (start !== null && this.underruns > before) {
      this.stalls += 1;
      this.emit("stall", { durationS: start - dryAt, playedS: this.playedSeconds(dryAt), underruns: this.underruns });
    }
  }

  /** Play everything buffered so far, gaplessly from now + lead, and report the link (or, after a rebuffer, the stall). */
  _startPlayback() {
    const startup = this._startup;
    if (startup === null) return;
    this._clearStartTimer();
    const now = this._clock();
    const rate = startup.rate();
    this._startup = null;
    const pending = this._pending;
    this._pending = [];
    const dryAt = this._dryAt;
    this._dryAt = null;
    const before = this.underruns;
    /** @type {number | null} */
    let resumedAt = null;
    for (const samples of pending) {
      const start = this.enqueue(samples);
      if (resumedAt === null) resumedAt = start;
    }
    if (dryAt !== null) {
      if (resumedAt !== null && this.underruns > before) {
        this.stalls += 1;
        this.emit("stall", { durationS: resumedAt - dryAt, playedS: this.playedSeconds(dryAt), underruns: this.underruns });
      }
      return;
    }
    this.emit("link", {
      rate,
      slow: rate !== null && rate < 1,
      startupS: startup.firstAt === null ? 0 : now - startup.firstAt,
      bufferedS: startup.bufferedS,
    });
  }

  _armStartTimer() {
    if (this._startTimer !== null || this._startup === null) return;
    const deadline = this._startup.deadline();
    if (deadline === null) return;
    const waitMs = Math.max(0, (deadline - this._clock()) * 1000);
    this._startTimer = this._timers.setTimeout(() => {
      this._startTimer = null;
      this._startPlayback();
    }, waitMs);
  }

  _clearStartTimer() {
    if (this._startTimer !== null) this._timers.clearTimeout(this._startTimer);
    this._startTimer = null;
  }

  /** Whether audio written this turn is waiting in the start-up buffer. */
  get buffering() {
    return this._startup !== null && this._pending.length > 0;
  }

  /** ms of the stream played by the schedule (playedSeconds), rounded. */
  playedMs() {
    return Math.round(this.playedSeconds() * 1000);
  }

  /** Start a new stream (a new turn): forget the schedule record and accept audio again. */
  /** @param {string} [_turnId] */
  begin(_turnId) {
    this.stop();
    this.stopped = false;
    this._stoppedAt = null;
    this._nextTime = 0;
    this._resetRecord();
    this._measureLink();
    this._complete = false;
    this._dryAt = null;
    this.rebuffers = 0;
    this._length = new SpeechLength({ priorCharsPerS: this.charsPerS });
    this._arrivals = new ArrivalRate();
    this._announced = 0;
    this._firstWire = null;
    const arrivals = this._arrivals;
    this._startup =
      this._startupOptions === false
        ? null
        : new StartupBuffer({ ...this._startupOptions, expectedS: this.expectedS(), priorRate: this.linkRate, chunkS: this.chunkS, arrivals });
  }

  /**
   * Schedule samples right after what is already scheduled. Returns the buffer's start time, or null
   * when the player was stopped (audio after a cancel is dropped).
   * @param {Int16Array} samples
   * @returns {number | null}
   */
  enqueue(samples) {
    if (this.stopped || samples.length === 0) return null;
    const ctx = this.ensureContext();
    const buffer = ctx.createBuffer(1, samples.length, this.sampleRate);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 32768;
    const now = ctx.currentTime;
    const first = this.scheduled.length === 0;
    let start = this._nextTime;
    let afterUnderrun = false;
    if (first || start < now) {
      afterUnderrun = !first;
      if (afterUnderrun) this.underruns += 1;
      start = now + this.leadS;
    }
    const source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(ctx.destination);
    source.onended = () => this._sources.delete(source);
    source.start(start);
    this._sources.add(source);
    this._nextTime = start + samples.length / this.sampleRate;
    this._record(buffer, start, afterUnderrun, now);
    return start;
  }

  /**
   * Keep what was actually handed to Web Audio: the buffer's float samples, converted back to int16
   * (exact: every s16 value / 32768 is a float32).
   * @param {AudioBufferLike} buffer
   * @param {number} start
   * @param {boolean} afterUnderrun
   * @param {number} at
   */
  _record(buffer, start, afterUnderrun, at) {
    const channel = buffer.getChannelData(0);
    const back = new Int16Array(channel.length);
    for (let i = 0; i < channel.length; i++) back[i] = Math.round(channel[i] * 32768);
    this.scheduled.push({ start, frames: back.length, offset: this.sampleCount, afterUnderrun, at });
    this._samples.push(back);
    this.sampleCount += back.length;
    this.digest = fnv1a(back, this.digest);
  }

  /** Stop playback at once: every scheduled source is stopped and later audio of this stream is dropped. */
  stop() {
    if (!this.stopped) this._stoppedAt = this.playedSeconds();
    this.stopped = true;
    this._clearStartTimer();
    this._pending = [];
    this._startup = null;
    this._dryAt = null;
    for (const source of this._sources) {
      try {
        source.stop();
      } catch {
        // A source that never started throws InvalidStateError on stop(): it will not play either way.
      }
      source.disconnect();
    }
    this._sources.clear();
  }

  /**
   * How many seconds of this stream's audio have played, by the schedule (not the wall clock): the stream
   * position of the context's clock, where the stream's sample n sits at n / sampleRate s. It counts the
   * buffers whose start time the clock has passed, so time spent in an underrun does not count. Frozen at the
   * position of stop(). This is the turn's caption clock, and what a cancel's played_ms reports.
   * @param {number} [now] context time (default: the context's currentTime)
   */
  playedSeconds(now) {
    if (this._stoppedAt !== null) return this._stoppedAt;
    const t = now ?? this.context?.currentTime ?? 0;
    let played = 0;
    for (const b of this.scheduled) {
      if (t <= b.start) break;
      played = (b.offset + Math.min(b.frames, (t - b.start) * this.sampleRate)) / this.sampleRate;
    }
    return played;
  }

  /** Whether audio is still playing or scheduled to play. */
  get playing() {
    if (this.context === null || this._sources.size === 0) return false;
    return this._nextTime > this.context.currentTime;
  }

  /** Sources started and not yet ended or stopped. */
  get activeSources() {
    return this._sources.size;
  }

  /** Context time at which everything scheduled so far ends. */
  get endTime() {
    return this._nextTime;
  }

  /** Every sample scheduled in this stream, in order (test hook). */
  scheduledSamples() {
    const out = new Int16Array(this.sampleCount);
    let at = 0;
    for (const part of this._samples) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  /**
   * Scheduling faults: consecutive buffers that do not start exactly where the previous one ended, other
   * than after a counted underrun (test hook; empty when playback is gapless).
   * @param {number} [toleranceS]
   */
  scheduleGaps(toleranceS = 1e-6) {
    const gaps = [];
    for (let i = 1; i < this.scheduled.length; i++) {
      const prev = this.scheduled[i - 1];
      const cur = this.scheduled[i];
      const expected = prev.start + prev.frames / this.sampleRate;
      if (!cur.afterUnderrun && Math.abs(cur.start - expected) > toleranceS) {
        gaps.push({ index: i, expected, start: cur.start });
      }
    }
    return gaps;
  }
}

/**
 * Wall seconds from the platform's monotonic clock (performance.now), else from Date.now.
 * @returns {() => number}
 */
function defaultClock() {
  const perf = /** @type {any} */ (globalThis).performance;
  if (typeof perf?.now === "function") return () => perf.now() / 1000;
  return () => Date.now() / 1000;
}

/**
 * The global AudioContext at the stream's rate (browsers).
 * @param {number} rate
 * @returns {AudioContextLike}
 */
function defaultContext(rate) {
  const AudioContext = /** @type {any} */ (globalThis).AudioContext;
  if (typeof AudioContext !== "function") {
    throw new TypeError("no AudioContext here: pass new WebAudioSink({createContext}) (React Native: react-native-audio-api)");
  }
  return new AudioContext({ sampleRate: rate, latencyHint: "interactive" });
}
