// SseDecoder (web/sse.js) against the cases relay_core.sse.SseDecoder decoded (fixtures/sse_cases.json).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { SseDecoder } from "../../web/sse.js";

const cases = JSON.parse(readFileSync(new URL("./fixtures/sse_cases.json", import.meta.url), "utf8"));

/** @param {Uint8Array} body @param {number[]} cuts */
function decode(body, cuts) {
  const decoder = new SseDecoder();
  const events = [];
  let start = 0;
  for (const point of [...new Set(cuts)].sort((a, b) => a - b).concat([body.length])) {
    events.push(...decoder.feed(body.subarray(start, point)));
    start = point;
  }
  events.push(...decoder.close());
  return events;
}

for (const c of cases) {
  test(`sse: ${c.name}`, () => {
    const body = Uint8Array.from(Buffer.from(c.body_b64, "base64"));
    assert.deepEqual(decode(body, c.cuts), c.events);
  });
}

test("sse: every single-byte split of a turn yields relay_core's events", () => {
  const c = cases[0];
  const body = Uint8Array.from(Buffer.from(c.body_b64, "base64"));
  const everyByte = Array.from({ length: body.length - 1 }, (_, i) => i + 1);
  assert.deepEqual(decode(body, everyByte), c.events);
});

test("sse: a CR at the end of a chunk waits for the next byte", () => {
  const decoder = new SseDecoder();
  assert.deepEqual(decoder.feed(new TextEncoder().encode("data: a\r")), []);
  assert.deepEqual(decoder.feed(new TextEncoder().encode("\n\r\n")), [{ data: "a", event: "message" }]);
});

test("sse: close with nothing pending yields nothing", () => {
  const decoder = new SseDecoder();
  decoder.feed(new TextEncoder().encode("data: x\n\n"));
  assert.deepEqual(decoder.close(), []);
});
