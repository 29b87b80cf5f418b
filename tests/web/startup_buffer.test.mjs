// The start-up buffer (clients/js/src/startup_buffer.js) on simulated arrival schedules: once a turn has measured a
// link at 0.6x real time, the next (steady and with jitter) plays without a stall once started; with no slow link
// measured the first chunk plays at once; a link too slow for the bound starts at the bound; and starting at once on
// the slow link does stall (the check is real).
import assert from "node:assert/strict";
import { test } from "node:test";

import { ArrivalRate, DEFAULT_MAX_WAIT_S, StartupBuffer, deficitS } from "../../clients/js/src/startup_buffer.js";

const CHUNK_S = 0.1;

/**
 * Arrivals of `totalS` audio seconds in CHUNK_S chunks over a link of `rate` audio seconds per wall second,
 * the first at wall time 1; `jitter` (0..1) moves each arrival by a deterministic fraction of its interval.
 * @param {number} rate
 * @param {number} totalS
 * @param {number} [jitter]
 * @param {number} [chunkS] audio seconds per message (each arrives whole)
 */
function schedule(rate, totalS, jitter = 0, chunkS = CHUNK_S) {
  const interval = chunkS / rate;
  const count = Math.round(totalS / chunkS);
  const out = [];
  let last = 0;
  for (let i = 0; i < count; i++) {
    const wobble = jitter * interval * Math.sin(i * 2.3999);
    const t = Math.max(last, 1 + i * interval + wobble);
    out.push({ t, s: chunkS });
    last = t;
  }
  return out;
}

/**
 * Play `arrivals` through a start-up decision (or from the first arrival when `buffer` is null) and count the
 * times playback ran dry after it started.
 * @param {{t: number, s: number}[]} arrivals
 * @param {StartupBuffer | null} buffer
 */
function simulate(arrivals, buffer) {
  let startAt = buffer === null ? arrivals[0].t : null;
  let end = 0; // wall time at which the audio scheduled so far runs out
  let stalls = 0;
  let queued = 0;
  for (const { t, s } of arrivals) {
    if (startAt === null && buffer !== null) {
      const deadline = buffer.deadline();
      if (deadline !== null && deadline < t) startAt = deadline;
    }
    if (startAt === null && buffer !== null) {
      if (buffer.arrive(s, t).start) startAt = t;
      queued += s;
      if (startAt !== null) end = startAt + queued;
      continue;
    }
    if (end === 0) end = /** @type {number} */ (startAt) + queued;
    if (t > end) {
      stalls += 1;
      end = t;
    }
    end += s;
  }
  if (startAt === null) startAt = arrivals.at(-1)?.t ?? 0; // the stream's end starts playback
  return { startupS: startAt - arrivals[0].t, stalls };
}

const SLOW = { priorRate: 0.6 };

test("startup: a link measured at 0.6x real time plays without a stall once started", () => {
  const result = simulate(schedule(0.6, 4), new StartupBuffer(SLOW));
  assert.equal(result.stalls, 0);
  assert.ok(result.startupS > 0 && result.startupS <= DEFAULT_MAX_WAIT_S, `waited ${result.startupS} s`);
});

test("startup: a jittery link averaging 0.6x real time plays without a stall once started", () => {
  const result = simulate(schedule(0.6, 4, 0.4), new StartupBuffer(SLOW));
  assert.equal(result.stalls, 0);
});

test("startup: starting at once on the 0.6x link stalls (what the buffer prevents)", () => {
  assert.ok(simulate(schedule(0.6, 4), null).stalls > 0);
});

test("startup: with no slow link measured the first chunk plays at once (the first sound never waits)", () => {
  for (const priorRate of [null, 1, 5]) {
    const buffer = new StartupBuffer({ priorRate });
    assert.equal(buffer.arrive(0.3, 2).start, true, `prior ${priorRate}`);
    assert.equal(simulate(schedule(5, 4), new StartupBuffer({ priorRate })).startupS, 0);
  }
});

test("startup: after a slow link, a turn whose link is fast again starts at its second chunk", () => {
  const arrivals = schedule(5, 4);
  const result = simulate(arrivals, new StartupBuffer(SLOW));
  assert.equal(result.startupS, arrivals[1].t - arrivals[0].t);
  assert.equal(result.stalls, 0);
});

test("startup: chunks that arrive together start at once (rate beyond measure)", () => {
  const buffer = new StartupBuffer({ priorRate: 0.5 });
  assert.equal(buffer.arrive(0.2, 3).start, false);
  const decision = buffer.arrive(0.2, 3);
  assert.equal(decision.start, true);
  assert.equal(decision.rate, Infinity);
});

test("startup: a link too slow for the bound starts at the bound", () => {
  const buffer = new StartupBuffer({ maxWaitS: 2, priorRate: 0.2 });
  const result = simulate(schedule(0.2, 4), buffer);
  assert.ok(Math.abs(result.startupS - 2) < 1e-9, `waited ${result.startupS} s`);
  assert.equal(buffer.decide(1 + 1.99).start, false);
  assert.equal(buffer.decide(1 + 2).start, true);
});

test("startup: the whole expected turn buffered starts playback whatever the rate", () => {
  const buffer = new StartupBuffer({ expectedS: 1, priorRate: 0.5 });
  assert.equal(buffer.arrive(1.5, 0).start, true);
});

test("startup: deficitS is the audio a slow link falls behind over the rest of the stream", () => {
  assert.equal(deficitS(null, 3), Infinity);
  assert.equal(deficitS(1, 3), 0);
  assert.equal(deficitS(2, 3), 0);
  assert.equal(deficitS(0.5, 0), 0);
  assert.equal(deficitS(0, 3), Infinity);
  assert.ok(Math.abs(deficitS(0.6, 3) - 2) < 1e-12);
  assert.ok(Math.abs(deficitS(0.5, 3) - 3) < 1e-12);
});

test("startup: a 12 s reply at 0.6x, told by expect(), waits long enough to play through (4 s assumed would not)", () => {
  const told = new StartupBuffer(SLOW);
  told.expect(12, 0);
  const result = simulate(schedule(0.6, 12), told);
  assert.equal(result.stalls, 0);
  assert.ok(result.startupS < DEFAULT_MAX_WAIT_S, `waited ${result.startupS} s`);
  assert.ok(simulate(schedule(0.6, 12), new StartupBuffer(SLOW)).stalls > 0);
});

test("startup: expect() decides again: a shorter turn than assumed starts at once once its audio is all there", () => {
  const buffer = new StartupBuffer(SLOW);
  assert.equal(buffer.arrive(0.5, 1).start, false);
  assert.equal(buffer.expect(0.5, 1.1).start, true);
});

test("startup: a rebuffer shares the turn's arrivals: its rate is the turn's from the turn's first arrival", () => {
  const arrivals = new ArrivalRate();
  arrivals.add(0.1, 1);
  arrivals.add(0.1, 1 + 0.1 / 0.6);
  arrivals.add(0.1, 1 + 0.2 / 0.6);
  const rebuffer = new StartupBuffer({ priorRate: arrivals.rate(), arrivals, expectedS: 3 });
  const decision = rebuffer.arrive(0.1, 1 + 0.2 / 0.6);
  assert.ok(Math.abs(/** @type {number} */ (decision.rate) - 0.6) < 1e-9);
  assert.equal(decision.start, false);
  assert.equal(rebuffer.bufferedS, 0.1, "only what arrived into the rebuffer counts as buffered");
});

test("startup: ArrivalRate does not count the first arrival's audio, and calls simultaneous arrivals Infinity", () => {
  const arrivals = new ArrivalRate();
  assert.equal(arrivals.rate(), null);
  arrivals.add(1, 0);
  assert.equal(arrivals.rate(), null);
  arrivals.add(0.5, 1);
  assert.equal(arrivals.rate(), 0.5);
  const together = new ArrivalRate();
  together.add(1, 3);
  together.add(1, 3);
  assert.equal(together.rate(), Infinity);
});

test("startup: whole sentence-sized messages (1.7 s, as Opus sends them) at 0.6x play through: the margin holds one", () => {
  const arrivals = schedule(0.6, 12 - (12 % 1.7), 0, 1.7);
  const told = new StartupBuffer(SLOW);
  told.expect(arrivals.length * 1.7, 0);
  const result = simulate(arrivals, told);
  assert.equal(result.stalls, 0);
  // a 6.8 s turn with 3.4 s in hand: the smooth-stream rule (deficit + 0.25 s) would start, and the last message,
  // arriving whole at 1 + 3 * 1.7 / 0.6 = 9.5 s, would be due at ~8.9 s: a stall
  const buffer = new StartupBuffer(SLOW);
  buffer.expect(4 * 1.7, 0);
  buffer.arrive(1.7, 1);
  const decision = buffer.arrive(1.7, 1 + 1.7 / 0.6);
  assert.ok(decision.bufferedS >= decision.neededS + 0.25, "the smooth-stream rule is met");
  assert.equal(decision.start, false, "but a whole message may still land late");
});
