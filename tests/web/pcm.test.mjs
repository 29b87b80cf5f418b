// PCM reassembly across arbitrary byte cuts, base64, audibility, digest (clients/js/src/pcm.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { PcmAssembler, PcmTimeline, base64ToBytes, bytesToBase64, firstAudibleIndex, fnv1a, pcmSampleCount } from "../../clients/js/src/pcm.js";

const samples = Int16Array.from([0, 1, -1, 32767, -32768, 256, -257, 12345]);
const bytes = new Uint8Array(samples.buffer.slice(0));

test("pcm: any cut of the byte stream reassembles the same samples", () => {
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= bytes.length; b++) {
      const asm = new PcmAssembler();
      const parts = [bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)].map((p) => asm.push(p));
      const joined = Int16Array.from(parts.flatMap((p) => Array.from(p)));
      assert.deepEqual(joined, samples, `cut at ${a},${b}`);
      assert.equal(asm.hasPartialSample, false);
      assert.equal(asm.totalSamples, samples.length);
    }
  }
});

test("pcm: an odd trailing byte is held until its partner arrives", () => {
  const asm = new PcmAssembler();
  assert.equal(asm.push(Uint8Array.from([0x34])).length, 0);
  assert.equal(asm.hasPartialSample, true);
  assert.deepEqual(asm.push(Uint8Array.from([0x12])), Int16Array.from([0x1234]));
  asm.push(Uint8Array.from([0xff]));
  asm.reset();
  assert.equal(asm.hasPartialSample, false);
});

test("pcm: the timeline places every piece after the samples before it, whatever the byte cuts", () => {
  const timeline = new PcmTimeline();
  const placed = [bytes.subarray(0, 3), bytes.subarray(3, 3), bytes.subarray(3, 10), bytes.subarray(10)].map((p) => timeline.append(p));
  assert.deepEqual(placed.map((p) => p.sampleOffset), [0, 1, 1, 5]);
  assert.deepEqual(Int16Array.from(placed.flatMap((p) => Array.from(p.samples))), samples);
  assert.equal(timeline.samples, samples.length);
  timeline.append(Uint8Array.from([0x01]));
  timeline.reset(); // a new stream: the half sample is dropped, the timeline goes on
  assert.deepEqual(timeline.append(Uint8Array.from([0x02, 0x00])), { sampleOffset: samples.length, samples: Int16Array.from([2]) });
});

test("pcm: whole samples are counted from a byte length, anything else is -1", () => {
  assert.deepEqual([0, 2, 4800, 1, 3].map(pcmSampleCount), [0, 1, 2400, -1, -1]);
});

test("pcm: base64 round trip", () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(base64ToBytes(bytesToBase64(all)), all);
  assert.equal(bytesToBase64(all), Buffer.from(all).toString("base64"));
});

test("pcm: first audible sample is the first above -40 dBFS", () => {
  // -40 dBFS is 1 % of full scale: 327.68.
  assert.equal(firstAudibleIndex(Int16Array.from([0, 100, -327, 328, 5])), 3);
  assert.equal(firstAudibleIndex(Int16Array.from([0, -400])), 1);
  assert.equal(firstAudibleIndex(Int16Array.from([1, 2, 3])), -1);
  assert.equal(firstAudibleIndex(Int16Array.from([0, 40, 0]), -60), 1);
});

test("pcm: the digest is FNV-1a over the s16le bytes and continues across buffers", () => {
  // FNV-1a 32 of the bytes 01 00 ff ff, computed independently from its definition.
  let h = 0x811c9dc5;
  for (const byte of [0x01, 0x00, 0xff, 0xff]) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  assert.equal(fnv1a(Int16Array.from([1, -1])), h);
  assert.equal(fnv1a(Int16Array.from([-1]), fnv1a(Int16Array.from([1]))), h);
});
