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
// arrival) and hands it to the next turn. Until a link slower than real time has been measured, playback starts at
// the first chunk (the first sound never waits for a measurement); after one, a turn waits until enough audio has
// arrived to play the rest of it without stalling (at most maxWaitS). A `link` event reports the rate. enqueue()
// schedules at once, with no start-up buffer (a caller that times its own audio). The player also keeps a record
// of everything it scheduled (samples read back from the AudioBuffers, start times) so a test can compare it with
// what the server sent.

import { Emitter } from "./emitter.js";
import { SAMPLE_RATE, fnv1a } from "./pcm.js";
import { timersImpl } from "./platform.js";
import { StartupBuffer } from "./startup_buffer.js";

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
    /** @type {StartupBuffer | null} this turn's start-up decision (null: playing, or no start-up buffer) */
    this._startup = null;
    /** @type {Int16Array[]} audio written while the start-up buffer fills */
    this._pending = [];
    /** @type {unknown} */
    this._startTimer = null;
    /** @type {number | null} the arrival rate of the latest turn that measured one (audio s per wall s); before
     * any, the start-up option priorRate (an app that knows its link) */
    this.linkRate = (options.startup || null)?.priorRate ?? null;
    /** @type {{firstAt: number, firstS: number, audioS: number, lastAt: number} | null} this turn's arrivals */
    this._arrivals = null;
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
   */
  write(samples, _sampleOffset) {
    if (this.stopped || samples.length === 0) return;
    this._noteArrival(samples.length / this.sampleRate);
    if (this._startup === null) {
      this._playNow(samples);
      return;
    }
    this._pending.push(samples);
    const decision = this._startup.arrive(samples.length / this.sampleRate, this._clock());
    if (decision.start) this._startPlayback();
    else this._armStartTimer();
  }

  /** @param {number} audioS seconds of audio that arrived now (this turn's link rate is measured from them) */
  _noteArrival(audioS) {
    const now = this._clock();
    if (this._arrivals === null) this._arrivals = { firstAt: now, firstS: audioS, audioS, lastAt: now };
    else {
      this._arrivals.audioS += audioS;
      this._arrivals.lastAt = now;
    }
  }

  /** Keep the finished turn's arrival rate for the next turn's start-up (kept as is when it measured none). */
  _measureLink() {
    const arrivals = this._arrivals;
    this._arrivals = null;
    if (arrivals === null || arrivals.audioS === arrivals.firstS) return;
    const elapsed = arrivals.lastAt - arrivals.firstAt;
    this.linkRate = elapsed > 0 ? (arrivals.audioS - arrivals.firstS) / elapsed : Infinity;
  }

  /** The turn's audio is complete: what waits in the start-up buffer plays now. */
  end() {
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

  /** Play everything buffered so far, gaplessly from now + lead, and report the link. */
  _startPlayback() {
    const startup = this._startup;
    if (startup === null) return;
    this._clearStartTimer();
    const now = this._clock();
    const rate = startup.rate() ?? startup.priorRate;
    this._startup = null;
    const pending = this._pending;
    this._pending = [];
    for (const samples of pending) this.enqueue(samples);
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
    this._startup =
      this._startupOptions === false ? null : new StartupBuffer({ ...this._startupOptions, priorRate: this.linkRate });
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
