// WebAudioSink (clients/js/src/web_audio_sink.js) on a stand-in AudioContext that records what was scheduled: gapless chaining,
// underrun handling, stop, and the sample record the browser tests compare with the server's PCM.
import assert from "node:assert/strict";
import { test } from "node:test";

import { fnv1a } from "../../clients/js/src/pcm.js";
import { WebAudioSink } from "../../clients/js/src/web_audio_sink.js";

class FakeBuffer {
  constructor(frames) {
    this.data = new Float32Array(frames);
  }
  getChannelData() {
    return this.data;
  }
}

class FakeSource {
  constructor(ctx) {
    this.ctx = ctx;
    this.buffer = null;
    this.startedAt = null;
    this.stopped = false;
    this.onended = null;
  }
  connect() {}
  disconnect() {}
  start(when) {
    this.startedAt = when;
    this.ctx.started.push(this);
  }
  stop() {
    this.stopped = true;
    this.onended?.();
  }
}

class FakeContext {
  constructor(rate) {
    this.sampleRate = rate;
    this.currentTime = 0;
    this.state = "running";
    this.destination = {};
    this.started = [];
  }
  createBuffer(_channels, frames) {
    return new FakeBuffer(frames);
  }
  createBufferSource() {
    return new FakeSource(this);
  }
}

function newPlayer() {
  /** @type {FakeContext | null} */
  let ctx = null;
  const player = new WebAudioSink({ leadS: 0.1, createContext: (rate) => (ctx = new FakeContext(rate)) });
  player.begin();
  player.ensureContext();
  return { player, ctx: /** @type {FakeContext} */ (/** @type {unknown} */ (ctx)) };
}

const block = (n, seed) => Int16Array.from({ length: n }, (_, i) => ((i * 7919 + seed * 104729) % 65536) - 32768);

test("player: each buffer starts exactly where the previous one ends", () => {
  const { player, ctx } = newPlayer();
  ctx.currentTime = 5;
  const sizes = [2400, 1, 4801, 240];
  sizes.forEach((n, i) => player.enqueue(block(n, i)));
  const starts = ctx.started.map((s) => s.startedAt);
  assert.equal(starts[0], 5.1);
  let t = 5.1;
  for (let i = 0; i < sizes.length; i++) {
    assert.ok(Math.abs(starts[i] - t) < 1e-12, `buffer ${i} starts at ${starts[i]}, not ${t}`);
    t += sizes[i] / 24000;
  }
  assert.deepEqual(player.scheduleGaps(), []);
  assert.equal(player.underruns, 0);
  assert.equal(player.endTime, t);
});

test("player: the record holds exactly the samples handed to Web Audio", () => {
  const { player, ctx } = newPlayer();
  const parts = [block(1000, 1), block(3, 2), Int16Array.from([-32768, 32767, 0, -1])];
  for (const p of parts) player.enqueue(p);
  const all = Int16Array.from(parts.flatMap((p) => Array.from(p)));
  assert.deepEqual(player.scheduledSamples(), all);
  assert.equal(player.sampleCount, all.length);
  assert.equal(player.digest, fnv1a(all));
  // and the floats really are x / 32768
  assert.equal(ctx.started[2].buffer.data[0], -1);
});

test("player: an underrun restarts after the lead and is counted, not hidden", () => {
  const { player, ctx } = newPlayer();
  player.enqueue(block(2400, 1)); // 0.1 .. 0.2
  ctx.currentTime = 0.5; // the network fell behind playback
  player.enqueue(block(2400, 2));
  assert.equal(player.underruns, 1);
  assert.ok(Math.abs(ctx.started[1].startedAt - 0.6) < 1e-12);
  assert.equal(player.scheduled[1].afterUnderrun, true);
  assert.deepEqual(player.scheduleGaps(), []);
});

test("player: a broken chain is reported by scheduleGaps", () => {
  const { player } = newPlayer();
  player.enqueue(block(240, 1));
  player.enqueue(block(240, 2));
  player.scheduled[1].start += 0.01;
  assert.equal(player.scheduleGaps().length, 1);
});

test("player: stop() stops every source and drops later audio until begin()", () => {
  const { player, ctx } = newPlayer();
  player.enqueue(block(2400, 1));
  player.enqueue(block(2400, 2));
  assert.equal(player.activeSources, 2);
  player.stop();
  assert.ok(ctx.started.every((s) => s.stopped));
  assert.equal(player.activeSources, 0);
  assert.equal(player.playing, false);
  assert.equal(player.enqueue(block(10, 3)), null);
  assert.equal(ctx.started.length, 2);
  player.begin();
  assert.notEqual(player.enqueue(block(10, 3)), null);
  assert.equal(player.sampleCount, 10);
});

test("player: playedSeconds follows the schedule, not the wall clock, and freezes at stop()", () => {
  const { player, ctx } = newPlayer();
  player.enqueue(block(2400, 1)); // stream 0.0-0.1 s plays at context 0.1-0.2
  assert.equal(player.playedSeconds(), 0);
  ctx.currentTime = 0.15;
  assert.ok(Math.abs(player.playedSeconds() - 0.05) < 1e-9);
  ctx.currentTime = 0.5; // ran dry: the time in the underrun is not audio played
  assert.ok(Math.abs(player.playedSeconds() - 0.1) < 1e-9);
  player.enqueue(block(2400, 2)); // stream 0.1-0.2 s plays at context 0.6-0.7
  ctx.currentTime = 0.65;
  assert.ok(Math.abs(player.playedSeconds() - 0.15) < 1e-9);
  player.stop();
  ctx.currentTime = 9;
  assert.ok(Math.abs(player.playedSeconds() - 0.15) < 1e-9, "frozen where Stop was pressed");
  player.begin();
  assert.equal(player.playedSeconds(), 0);
});

/**
 * A sink whose wall clock and context clock are one fake clock (seconds), with fake timers, its stall and link
 * events recorded.
 * @param {object} [startup]
 */
function clockedPlayer(startup) {
  const clock = { now: 0 };
  /** @type {{fn: () => void, at: number}[]} */
  const timers = [];
  /** @type {FakeContext | null} */
  let ctx = null;
  const player = new WebAudioSink({
    leadS: 0.1,
    startup,
    createContext: (rate) => (ctx = new FakeContext(rate)),
    clock: () => clock.now,
    timers: {
      setTimeout: (fn, ms) => {
        const timer = { fn, at: clock.now + ms / 1000 };
        timers.push(timer);
        return timer;
      },
      clearTimeout: (timer) => timers.splice(timers.indexOf(timer), 1),
    },
  });
  player.ensureContext();
  const context = /** @type {FakeContext} */ (/** @type {unknown} */ (ctx));
  const stalls = [];
  const links = [];
  player.on("stall", (e) => stalls.push(e));
  player.on("link", (e) => links.push(e));
  /** Move both clocks to `t`, firing due timers. */
  const advance = (t) => {
    clock.now = t;
    context.currentTime = t;
    for (const timer of [...timers].filter((x) => x.at <= t)) {
      timers.splice(timers.indexOf(timer), 1);
      timer.fn();
    }
  };
  return { player, ctx: context, stalls, links, advance, timers };
}

const CHUNK = 2400; // 0.1 s at 24 kHz

/**
 * One turn of 40 chunks (4 s) arriving at 0.6x real time from wall time `from`.
 * @param {ReturnType<typeof clockedPlayer>} p
 * @param {string} turnId
 * @param {number} from
 */
function slowTurn(p, turnId, from) {
  p.player.begin(turnId);
  for (let i = 0; i < 40; i++) {
    p.advance(from + (i * 0.1) / 0.6);
    p.player.write(block(CHUNK, i), i * CHUNK);
  }
  p.player.end();
}

test("sink: once a turn has measured a 0.6x link, the next waits for the start-up buffer and plays 4 s without an underrun", () => {
  const p = clockedPlayer();
  slowTurn(p, "t1", 1); // the first sound never waits: this turn starts at once, stalls, and measures the link
  assert.ok(p.player.stalls > 0, "starting at once on a 0.6x link stalls (what the buffer prevents)");
  assert.equal(p.links[0].slow, false);
  slowTurn(p, "t2", 20);
  assert.ok(Math.abs(p.player.linkRate - 0.6) < 1e-9);
  assert.equal(p.links.length, 2);
  assert.equal(p.links[1].slow, true);
  assert.ok(Math.abs(p.links[1].rate - 0.6) < 1e-9);
  assert.ok(p.links[1].startupS > 0 && p.links[1].startupS <= 3);
  const second = p.ctx.started.filter((b) => b.startedAt >= 20);
  assert.ok(second[0].startedAt > 20.1, "the first buffer waited for the start-up buffer");
  assert.equal(p.player.underruns, 0);
  assert.equal(p.player.stalls, 0);
  assert.deepEqual(p.player.scheduleGaps(), []);
  assert.equal(p.player.sampleCount, 40 * CHUNK);
});

test("sink: with no slow link measured playback starts at the first chunk", () => {
  const { player, ctx, links, advance } = clockedPlayer();
  player.begin("t1");
  advance(2);
  player.write(block(CHUNK, 0), 0);
  assert.equal(ctx.started.length, 1);
  assert.ok(Math.abs(ctx.started[0].startedAt - 2.1) < 1e-9);
  assert.equal(links[0].slow, false);
  assert.equal(links[0].startupS, 0);
});

test("sink: a stall after the start is an event with its duration (once playback resumes), and counted as an underrun", () => {
  const { player, stalls, advance } = clockedPlayer();
  player.begin("t1");
  advance(1);
  player.write(block(CHUNK, 0), 0);
  player.write(block(CHUNK, 1), CHUNK); // starts: plays 1.1 .. 1.3
  advance(2);
  player.write(block(CHUNK, 2), 2 * CHUNK); // ran dry at 1.3: the rebuffer holds it (0.2 audio s per wall s)
  assert.equal(player.buffering, true);
  assert.equal(stalls.length, 0, "the stall is reported when playback resumes");
  player.end(); // the turn's audio is complete: plays again at 2.1
  assert.equal(player.rebuffers, 1);
  assert.equal(player.underruns, 1);
  assert.equal(player.stalls, 1);
  assert.equal(stalls.length, 1);
  assert.ok(Math.abs(stalls[0].durationS - 0.8) < 1e-9, `stall of ${stalls[0].durationS} s`);
  assert.ok(Math.abs(stalls[0].playedS - 0.2) < 1e-9);
});

test("sink: the start-up wait is bounded by a timer, and end() or stop() ends it", () => {
  const bounded = clockedPlayer({ maxWaitS: 2, priorRate: 0.2 });
  bounded.player.begin("t1");
  bounded.advance(1);
  bounded.player.write(block(CHUNK, 0), 0);
  bounded.advance(2.9);
  assert.equal(bounded.ctx.started.length, 0);
  bounded.advance(3);
  assert.equal(bounded.ctx.started.length, 1);
  assert.equal(bounded.links[0].rate, 0.2);

  const ended = clockedPlayer({ priorRate: 0.2 });
  ended.player.begin("t1");
  ended.player.write(block(CHUNK, 0), 0);
  assert.equal(ended.player.buffering, true);
  ended.player.end();
  assert.equal(ended.ctx.started.length, 1);
  assert.equal(ended.timers.length, 0);

  const stopped = clockedPlayer({ priorRate: 0.2 });
  stopped.player.begin("t1");
  stopped.player.write(block(CHUNK, 0), 0);
  stopped.player.stop();
  assert.equal(stopped.timers.length, 0);
  stopped.advance(10);
  assert.equal(stopped.ctx.started.length, 0);
  assert.equal(stopped.player.sampleCount, 0);
});

test("sink: startup false plays every write at once", () => {
  const { player, ctx } = clockedPlayer(false);
  player.begin("t1");
  player.write(block(CHUNK, 0), 0);
  assert.equal(ctx.started.length, 1);
});

/** Base64 bytes of a CHUNK of PCM on the wire (what the client passes as write's wireBytes). */
const PCM_WIRE = 4 * Math.ceil((CHUNK * 2) / 3);

/**
 * One turn of `seconds` of audio in 0.1 s chunks over a link of `rate`, its audio from wall time `from`; the reply's
 * text (`chars` characters, default: what `seconds` of speech reads at 14 characters a second) arrives ahead of it,
 * in four pieces over its first second. Returns the wall time of its first chunk.
 * @param {ReturnType<typeof clockedPlayer>} p
 * @param {{from: number, rate: number, seconds: number, chars?: number | null}} turn
 */
function playTurn(p, { from, rate, seconds, chars }) {
  p.player.begin("t");
  const text = "x".repeat(chars === undefined ? Math.round(seconds * 14) : (chars ?? 0));
  const pieces = text === "" ? [] : [0, 1, 2, 3].map((k) => ({ at: from - 0.2 + k * 0.3, text: text.slice((k * text.length) / 4, ((k + 1) * text.length) / 4) }));
  const chunks = Math.round(seconds / 0.1);
  for (let i = 0; i < chunks; i++) {
    const at = from + (i * 0.1) / rate;
    while (pieces.length > 0 && pieces[0].at <= at) {
      const piece = /** @type {{at: number, text: string}} */ (pieces.shift());
      p.advance(Math.max(p.ctx.currentTime, piece.at));
      p.player.text(piece.text);
    }
    p.advance(at);
    p.player.write(block(CHUNK, i), i * CHUNK, PCM_WIRE);
  }
  p.player.end();
  p.advance(from + chunks * 0.1 / rate + 30); // plays out (and fires any start-up timer)
  return from;
}

test("sink: a first turn at 0.6x with no prior starts at once, stalls once, rebuffers by the measured rate, then plays through", () => {
  for (const seconds of [4, 12]) {
    const p = clockedPlayer();
    playTurn(p, { from: 1, rate: 0.6, seconds });
    assert.equal(p.ctx.started[0].startedAt, 1.1, "the first sound went out at once");
    assert.equal(p.player.stalls, 1, `${seconds} s reply: one stall`);
    assert.equal(p.player.rebuffers, 1);
    assert.equal(p.stalls.length, 1);
    const after = p.player.scheduled.filter((b) => b.afterUnderrun);
    assert.equal(after.length, 1, "after the rebuffer, no underrun");
    assert.deepEqual(p.player.scheduleGaps(), []);
    assert.equal(p.player.sampleCount, Math.round(seconds / 0.1) * CHUNK);
  }
});

test("sink: without the rebuffer the same first turn stalls again and again (what the rebuffer prevents)", () => {
  const p = clockedPlayer(false);
  playTurn(p, { from: 1, rate: 0.6, seconds: 4 });
  assert.ok(p.player.underruns > 5, `${p.player.underruns} underruns`);
});

test("sink: a 12 s reply at 0.6x plays without a stall after start-up: its text says how long it is", () => {
  const p = clockedPlayer();
  playTurn(p, { from: 1, rate: 0.6, seconds: 4 }); // measures the link
  playTurn(p, { from: 100, rate: 0.6, seconds: 12 });
  assert.ok(Math.abs(p.player.linkRate - 0.6) < 1e-9);
  assert.equal(p.links.at(-1).slow, true);
  assert.ok(p.links.at(-1).startupS > 5 && p.links.at(-1).startupS < 10, `waited ${p.links.at(-1).startupS} s`);
  assert.equal(p.player.underruns, 0);
  assert.equal(p.player.stalls, 0);
  assert.equal(p.player.rebuffers, 0);
});

test("sink: the same 12 s reply without its text (4 s assumed, then 4 s more at each stall) stalls (what the text prevents)", () => {
  const p = clockedPlayer();
  playTurn(p, { from: 1, rate: 0.6, seconds: 4, chars: null });
  playTurn(p, { from: 100, rate: 0.6, seconds: 12, chars: null });
  assert.ok(p.player.stalls >= 1, "the start-up buffer sized for 4 s ran dry");
  assert.equal(p.player.rebuffers, p.player.stalls);
});

test("sink: a first turn whose platform reports a slow downlink buffers from its first chunk and never stalls", () => {
  const p = clockedPlayer({});
  // 300 kbit/s against PCM's 512 kbit/s of base64: 0.59 audio seconds per wall second
  p.player._downlinkBps = () => 300_000;
  playTurn(p, { from: 1, rate: 0.6, seconds: 4 });
  assert.ok(Math.abs(p.links[0].rate - 0.6) < 0.05, `rate ${p.links[0].rate}`);
  assert.equal(p.links[0].slow, true);
  assert.ok(p.ctx.started[0].startedAt > 1.1, "it waited for the start-up buffer");
  assert.equal(p.player.stalls, 0);
  assert.equal(p.player.underruns, 0);
});

test("sink: on a fast link the first sound is unchanged: at the first chunk, whatever the downlink estimate says", () => {
  const reference = clockedPlayer(false);
  playTurn(reference, { from: 1, rate: 20, seconds: 4 });
  for (const downlink of [null, 10e6, 600_000]) {
    const p = clockedPlayer({});
    p.player._downlinkBps = () => downlink;
    playTurn(p, { from: 1, rate: 20, seconds: 4 });
    assert.equal(p.ctx.started[0].startedAt, reference.ctx.started[0].startedAt, `downlink ${downlink}`);
    assert.equal(p.links[0].startupS, 0);
    assert.equal(p.player.stalls, 0);
    assert.deepEqual(p.player.scheduledSamples(), reference.player.scheduledSamples());
  }
});

test("sink: the link is timed by arrived() (audio on the wire), not by a write delayed by decoding", () => {
  for (const announce of [true, false]) {
    const p = clockedPlayer({ priorRate: 0.6 });
    p.player.begin("t");
    const arrivals = [1, 1 + 0.5 / 0.6, 1 + 1.0 / 0.6]; // 0.5 s messages at 0.6x
    const writes = [1.5, arrivals[1], arrivals[2]]; // the first waited 0.5 s for its decoder to start
    const events = [...arrivals.map((t, i) => ({ t, i, kind: "arrive" })), ...writes.map((t, i) => ({ t, i, kind: "write" }))];
    events.sort((a, b) => a.t - b.t || (a.kind === "arrive" ? -1 : 1));
    for (const { t, i, kind } of events) {
      p.advance(t);
      if (kind === "arrive" && announce) p.player.arrived(12_000, 1000);
      if (kind === "write") p.player.write(block(12_000, i), i * 12_000, 1000);
    }
    const rate = /** @type {any} */ (p.player)._arrivals.rate();
    if (announce) assert.ok(Math.abs(rate - 0.6) < 1e-9, `rate ${rate}`);
    else assert.ok(rate > 0.7, `timed by the writes the rate reads ${rate}`);
  }
});
