// Local mode (web/agent_direct.js): the agent's SSE body, cut into arbitrary chunks, gives the page the same
// text and PCM relay_core framed; cancel posts the agent's cancel action with the same session header; send() runs
// the turn through the library (a Turn: Opus asked for and decoded as on the gateway route, the sink's start-up
// buffer fed the reply's text and each chunk's bytes on the wire).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { PcmSink, Turn, WebAudioSink, base64ToBytes } from "../../clients/js/src/index.js";
import { AGENTCORE_SESSION_HEADER, AgentDirectClient, AgentEventMapper, newSessionId } from "../../web/agent_direct.js";

const sse = JSON.parse(readFileSync(new URL("./fixtures/sse_cases.json", import.meta.url), "utf8"));
const session = JSON.parse(readFileSync(new URL("./fixtures/client_session_cases.json", import.meta.url), "utf8"));
const turnBody = Buffer.from(sse[0].body_b64, "base64");
const expected = session[0].expect; // the same agent turn: its text and PCM as relay_core holds them

/** A fetch stand-in answering one SSE body in chunks of `step` bytes; records requests. */
function fakeFetch(body, step, requests) {
  return async (url, init) => {
    requests.push({ url, init });
    const payload = JSON.parse(init.body);
    if (payload.action === "cancel") return new Response(JSON.stringify({ cancelled: [payload.request_id] }));
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < body.length; i += step) controller.enqueue(new Uint8Array(body.subarray(i, i + step)));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  };
}

function collect(events) {
  const pcm = events.filter((e) => e.type === "audio_received").map((e) => Buffer.from(e.samples.buffer));
  return {
    text: events.filter((e) => e.type === "text_received").map((e) => e.text).join(""),
    pcm_b64: Buffer.concat(pcm).toString("base64"),
    last: events.at(-1),
  };
}

for (const step of [1, 7, 4096, 1 << 20]) {
  test(`direct: a turn read in ${step}-byte chunks yields the agent's text and PCM`, async () => {
    const events = [];
    const requests = [];
    const client = new AgentDirectClient({ endpoint: "/agent/invocations", onEvent: (e) => events.push(e), fetchImpl: fakeFetch(turnBody, step, requests) });
    await client.run({ prompt: "hi", mode: "bidi", turnId: "t-1" });
    const got = collect(events);
    assert.equal(got.text, expected.text);
    assert.equal(got.pcm_b64, expected.pcm_b64);
    assert.deepEqual(got.last, { type: "turn_ended", turnId: "t-fixture0000000000000001", outcome: "completed", code: null, message: null });
    const init = requests[0].init;
    assert.equal(init.headers.accept, "text/event-stream");
    assert.equal(init.headers[AGENTCORE_SESSION_HEADER], client.sessionId);
    assert.deepEqual(JSON.parse(init.body), { prompt: "hi", mode: "bidi", request_id: "t-1" });
  });
}

test("direct: voice and lang go into the agent's payload (lang as its code); a bad lang is refused before any request", async () => {
  const requests = [];
  const client = new AgentDirectClient({ endpoint: "/a", onEvent: () => undefined, fetchImpl: fakeFetch(turnBody, 4096, requests) });
  await assert.rejects(client.run({ prompt: "hi", lang: "klingon", turnId: "t-5" }), TypeError);
  assert.equal(requests.length, 0);
  await client.run({ prompt: "hi", voice: "jm_kumo", lang: "A", turnId: "t-6" });
  await client.run({ prompt: "hi", voice: null, lang: null, turnId: "t-7" });
  const [spoken, plain] = requests.map((r) => JSON.parse(r.init.body));
  assert.deepEqual(spoken, { prompt: "hi", mode: "bidi", request_id: "t-6", voice: "jm_kumo", lang: "en-us" });
  assert.deepEqual(plain, { prompt: "hi", mode: "bidi", request_id: "t-7" });
});

test("direct: a stream that ends without agent_end is reported as a failed turn", async () => {
  const events = [];
  const cut = turnBody.subarray(0, Math.floor(turnBody.length / 2));
  const client = new AgentDirectClient({ endpoint: "/x", onEvent: (e) => events.push(e), fetchImpl: fakeFetch(cut, 999, []) });
  await client.run({ prompt: "hi", turnId: "t-2" });
  assert.equal(events.at(-1).type, "turn_ended");
  assert.equal(events.at(-1).outcome, "failed");
});

test("direct: an HTTP error is a failed turn with the agent's answer", async () => {
  const events = [];
  const fetchImpl = async () => new Response("prompt is required", { status: 400 });
  const client = new AgentDirectClient({ endpoint: "/x", onEvent: (e) => events.push(e), fetchImpl });
  await client.run({ prompt: "", turnId: "t-3" });
  assert.equal(events.length, 1);
  assert.equal(events[0].outcome, "failed");
  assert.match(events[0].message, /HTTP 400: prompt is required/);
});

test("direct: cancel posts the cancel action for the running turn in the same conversation", async () => {
  const requests = [];
  const client = new AgentDirectClient({ endpoint: "/a", onEvent: () => undefined, fetchImpl: fakeFetch(turnBody, 4096, requests) });
  await client.run({ prompt: "hi", turnId: "t-4" });
  await client.cancel();
  const cancel = requests.at(-1);
  assert.deepEqual(JSON.parse(cancel.init.body), { action: "cancel", request_id: "t-4" });
  assert.equal(cancel.init.headers[AGENTCORE_SESSION_HEADER], requests[0].init.headers[AGENTCORE_SESSION_HEADER]);
});

test("direct: mapper ignores unknown events; session ids fit AgentCore's 33..256", () => {
  assert.deepEqual(new AgentEventMapper().map({ type: "future_event" }), []);
  const id = newSessionId();
  assert.ok(id.length >= 33 && id.length <= 256, id);
});

test("direct: word timings are asked for, surfaced in order, and a cancel carries played_ms", async () => {
  const timedCase = session.find((c) => c.name.startsWith("word timings"));
  const events = [];
  const requests = [];
  const mapper = new AgentEventMapper();
  const words = timedCase.expect.words;
  const mapped = [
    ...mapper.map({ type: "word_timings", request_id: "t-3", words: words.slice(0, 2) }),
    ...mapper.map({ type: "word_timings", request_id: "t-3", words: words.slice(2, 3) }),
    ...mapper.map({ type: "word_timings", request_id: "t-3", words: [{ word: "x", start_s: 2, end_s: 1 }] }),
  ];
  assert.deepEqual(mapped.map((e) => [e.type, e.seq]), [["words_received", 0], ["words_received", 1], ["protocol_error", undefined]]);
  assert.deepEqual(mapped.slice(0, 2).flatMap((e) => e.words), words.slice(0, 3));
  const client = new AgentDirectClient({ endpoint: "/a", onEvent: (e) => events.push(e), fetchImpl: fakeFetch(turnBody, 4096, requests) });
  await client.run({ prompt: "hi", turnId: "t-3", timings: true });
  assert.equal(JSON.parse(requests[0].init.body).timings, true);
  await client.cancel(1500.4);
  assert.deepEqual(JSON.parse(requests[1].init.body), { action: "cancel", request_id: "t-3", played_ms: 1500 });
});

test("direct: newConversation() sends later turns under a fresh session id", async () => {
  const requests = [];
  const client = new AgentDirectClient({ endpoint: "/a", onEvent: () => undefined, fetchImpl: fakeFetch(turnBody, 4096, requests) });
  await client.run({ prompt: "hi", turnId: "t-1" });
  await client.run({ prompt: "again", turnId: "t-2" });
  client.newConversation();
  await client.run({ prompt: "over", turnId: "t-3" });
  const sessions = requests.map((r) => r.init.headers[AGENTCORE_SESSION_HEADER]);
  assert.equal(sessions[0], sessions[1], "one conversation until told otherwise");
  assert.notEqual(sessions[2], sessions[1]);
  assert.equal(sessions[2], client.sessionId);
});

test("direct: a turn whose speech waits in line says so before its audio, then speaks what the agent spoke", async () => {
  // The agent's events as relay_core serializes them (tests/web/test_web_fixtures.py), speech_waiting included.
  const waitedCase = sse.find((c) => c.name.includes("speech_waiting"));
  const events = [];
  const client = new AgentDirectClient({
    endpoint: "/a",
    onEvent: (e) => events.push(e),
    fetchImpl: fakeFetch(Buffer.from(waitedCase.body_b64, "base64"), 333, []),
  });
  await client.run({ prompt: "hi", turnId: "t-8" });
  const types = events.map((e) => e.type);
  const waiting = events.filter((e) => e.type === "speech_waiting_received");
  assert.deepEqual(waiting, [{ type: "speech_waiting_received", turnId: session[0].turn_id, seq: 0, position: 3 }]);
  assert.ok(types.indexOf("speech_waiting_received") < types.indexOf("audio_received"), types.join(" "));
  const got = collect(events);
  assert.equal(got.text, expected.text);
  assert.equal(got.pcm_b64, expected.pcm_b64);
  assert.equal(got.last.outcome, "completed");
});

// The direct route through the library: the same Opus negotiation and sink behaviour as the gateway route.
const opus = JSON.parse(readFileSync(new URL("./fixtures/opus_tone.json", import.meta.url), "utf8"));
/**
 * The Opus fixture's turn as the agent streams it itself, one SSE event each: request_id for turn_id, and none of
 * what only the client wire carries (sample_offset, total_samples).
 */
const opusBody = Buffer.from(
  opus.messages
    .map((m) => JSON.parse(m))
    .map(({ turn_id, sample_offset, total_samples, ...event }) => `data: ${JSON.stringify({ ...event, request_id: turn_id })}\n\n`)
    .join(""),
);
const opusChunks = opus.messages.map((m) => JSON.parse(m)).filter((m) => m.type === "audio_chunk");

test("direct: send() asks the agent for Opus once a decoder is found, and the sink gets its PCM on the PCM timeline", async () => {
  const requests = [];
  const written = [];
  const texts = [];
  const sink = new PcmSink({ onPcm: (samples, offset) => written.push({ samples, offset }) });
  Object.assign(sink, { text: (/** @type {string} */ t) => texts.push(t) });
  const client = new AgentDirectClient({ endpoint: "/a", fetchImpl: fakeFetch(opusBody, 333, requests), audio: "opus", sink });
  assert.deepEqual(await client.audioReady, { format: "opus", decoder: "wasm", reason: null });
  const turn = client.send({ prompt: "hum", turnId: "t-9" });
  assert.ok(turn instanceof Turn);
  assert.equal(turn.audio, "opus");
  const result = await turn.done;
  assert.equal(JSON.parse(requests[0].init.body).audio, "opus");
  assert.equal(result.outcome, "completed");
  assert.equal(result.samples, opus.total_samples);
  assert.deepEqual(written.map((w) => [w.offset, w.samples.length]), opusChunks.map((c) => [c.sample_offset, c.samples]));
  const expected = opus.expected_pcm.map((b64) => {
    const bytes = base64ToBytes(b64);
    return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
  });
  let energy = 0;
  let error = 0;
  written.forEach((w, i) => w.samples.forEach((v, j) => ((energy += expected[i][j] ** 2), (error += (v - expected[i][j]) ** 2))));
  assert.ok(10 * Math.log10(energy / Math.max(error, 1)) > 30, "decoded as libopus decodes it");
});

test("direct: a PCM client (or a turn before the decoder is chosen) asks for PCM: no audio field, PCM to the sink", async () => {
  const requests = [];
  let samples = 0;
  const sink = new PcmSink({ onPcm: (s) => (samples += s.length) });
  const client = new AgentDirectClient({ endpoint: "/a", fetchImpl: fakeFetch(turnBody, 4096, requests), sink });
  const early = client.send({ prompt: "hi", turnId: "t-1", audio: "opus" }); // no decoder chosen yet: PCM
  assert.equal(early.audio, "pcm");
  await early.done;
  assert.equal(JSON.parse(requests[0].init.body).audio, undefined);
  assert.equal(samples * 2, Buffer.from(expected.pcm_b64, "base64").length);
  assert.equal((await client.audioReady).format, "pcm");
});

test("direct: the sink's start-up buffer and events work as on the gateway route (text ahead, wire bytes, link)", async () => {
  const links = [];
  const writes = [];
  const sink = new WebAudioSink({
    createContext: () => /** @type {any} */ ({ currentTime: 0, state: "running", destination: {}, createBuffer: (_c, n) => ({ getChannelData: () => new Float32Array(n) }), createBufferSource: () => ({ connect() {}, disconnect() {}, start() {}, stop() {}, onended: null, buffer: null }) }),
  });
  const write = sink.write.bind(sink);
  sink.write = (s, o, wireBytes) => (writes.push(wireBytes), write(s, o, wireBytes));
  sink.on("link", (e) => links.push(e));
  const client = new AgentDirectClient({ endpoint: "/a", fetchImpl: fakeFetch(turnBody, 4096, []), sink });
  const turn = client.send({ prompt: "hi", turnId: "t-1" });
  const stalls = [];
  turn.on("stall", (e) => stalls.push(e));
  await turn.done;
  assert.equal(links.length, 1, "the Turn handed the sink's link event on");
  assert.ok(writes.length > 0 && writes.every((b) => b > 0), "each write carries its bytes on the wire");
  assert.ok(sink.expectedS() > 0 && sink._length.chars === expected.text.length, "the sink got the reply's text");
});

test("direct: Turn.cancel() on the direct route posts the cancel with the sink's played ms", async () => {
  const requests = [];
  const sink = new PcmSink({ onPcm: () => undefined, playedMs: () => 1234 });
  const client = new AgentDirectClient({ endpoint: "/a", fetchImpl: fakeFetch(turnBody, 4096, requests), sink });
  const turn = client.send({ prompt: "hi", turnId: "t-4" });
  await turn.done;
  assert.equal(turn.cancel(), 1234);
  await client.running;
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(client.sentCancels, [{ action: "cancel", request_id: "t-4", played_ms: 1234 }]);
});

test("direct: send() refuses a language Kokoro does not speak before any request", () => {
  const requests = [];
  const client = new AgentDirectClient({ endpoint: "/a", fetchImpl: fakeFetch(turnBody, 4096, requests) });
  assert.throws(() => client.send({ prompt: "hi", lang: "klingon", turnId: "t-5" }), TypeError);
  assert.equal(requests.length, 0);
});
