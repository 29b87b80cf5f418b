// connect()/RelayClient/Turn (clients/js/src/client.js) on a scripted WebSocket: a turn's events come out in
// order and once through a drop and resume, audio goes to the sink, cancel() reports the sink's played ms.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { PcmSink, WebAudioSink, base64ToBytes, connect } from "../../clients/js/src/index.js";
import { FakeSocket, ManualTimers, flush } from "./fakes.mjs";

const cases = JSON.parse(readFileSync(new URL("./fixtures/client_session_cases.json", import.meta.url), "utf8"));
const byName = (prefix) => cases.find((c) => c.name.startsWith(prefix));
const TURN_ID = "t-fixture0000000000000001";

async function client(options = {}) {
  FakeSocket.all = [];
  const timers = new ManualTimers();
  const relay = connect({ url: "ws://h/ws", getToken: () => "tok", WebSocket: /** @type {any} */ (FakeSocket), timers, random: () => 0, ...options });
  await flush();
  FakeSocket.all[0].open();
  return { relay, timers };
}

test("client: connect() checks its options with messages that say what to pass", () => {
  assert.throws(() => connect(/** @type {any} */ ({ url: "http://h", getToken: () => "t" })), /ws:\/\/ or wss:\/\//);
  assert.throws(() => connect(/** @type {any} */ ({ url: "ws://h" })), /getToken/);
});

test("client: a turn emits text, audio (with sampleOffset) and end, once each, through a drop and resume", async () => {
  const fixture = byName("dropped connection mid-turn");
  const { relay, timers } = await client();
  const written = [];
  const sink = new PcmSink({ onPcm: (samples, offset) => written.push([offset, samples.length]) });
  const turn = relay.send("hi", { turnId: TURN_ID, sink, timings: true });
  const seen = { text: "", audio: [], ends: 0 };
  turn.on("text", (e) => (seen.text += e.text));
  turn.on("audio", (e) => seen.audio.push(e));
  turn.on("end", () => (seen.ends += 1));
  assert.equal(FakeSocket.all[0].sentJson()[0].timings, true);
  let socket = FakeSocket.all[0];
  for (const step of fixture.steps) {
    if (step.receive) socket.deliver(step.receive);
    if (step.resume) {
      socket.close(1006); // the network drops here; the client reconnects and resumes by itself
      timers.advance(0);
      await flush();
      socket = FakeSocket.all.at(-1);
      socket.open();
      assert.deepEqual(socket.sentJson(), [JSON.parse(step.resume)]);
    }
  }
  const result = await turn.done;
  assert.equal(result.outcome, fixture.expect.outcome);
  assert.equal(seen.text, fixture.expect.text);
  assert.equal(seen.ends, 1);
  const pcm = base64ToBytes(fixture.expect.pcm_b64);
  let offset = 0;
  for (const e of seen.audio) {
    assert.equal(e.sampleOffset, offset, "contiguous");
    assert.ok(e.samples instanceof Int16Array);
    offset += e.samples.length;
  }
  assert.equal(offset * 2, pcm.length);
  assert.deepEqual(written, seen.audio.map((e) => [e.sampleOffset, e.samples.length]));
});

test("client: a failed turn emits error then end; cancel() sends the sink's played ms and stops it", async () => {
  const { relay } = await client();
  let stopped = 0;
  const sink = new PcmSink({ onPcm: () => undefined, onStop: () => (stopped += 1), playedMs: () => 1234.4 });
  const turn = relay.send("hi", { turnId: TURN_ID, sink });
  const order = [];
  turn.on("error", (e) => order.push(`error:${e.code}`));
  turn.on("end", (e) => order.push(`end:${e.outcome}`));
  assert.equal(turn.cancel(), 1234.4);
  assert.equal(stopped, 1);
  const cancel = FakeSocket.all[0].sentJson().at(-1);
  assert.deepEqual(cancel, { action: "cancel", turn_id: TURN_ID, played_ms: 1234 });
  FakeSocket.all[0].deliver(JSON.stringify({ type: "error", turn_id: TURN_ID, seq: 0, code: "agent_unavailable", message: "try again shortly" }));
  assert.deepEqual(order, ["error:agent_unavailable", "end:failed"]);
  assert.equal((await turn.done).code, "agent_unavailable");
});

test("client: a blank prompt is refused before anything is sent", async () => {
  const { relay } = await client();
  assert.throws(() => relay.send("  "), /non-blank/);
  assert.deepEqual(FakeSocket.all[0].sent, []);
});

test("client: newConversation() resolves on conversation_started, is sent again after a drop, rejects on a refusal", async () => {
  const { relay, timers } = await client();
  let started = 0;
  relay.on("conversationStarted", () => (started += 1));
  let settled = false;
  const first = relay.newConversation().then(() => (settled = true));
  assert.deepEqual(FakeSocket.all[0].sentJson(), [{ action: "newConversation" }]);
  assert.equal(relay.session.conversationPending, true);
  FakeSocket.all[0].close(1006); // dropped before the answer: the next socket sends it again
  timers.advance(0);
  await flush();
  const socket = FakeSocket.all.at(-1);
  socket.open();
  assert.deepEqual(socket.sentJson(), [{ action: "newConversation" }]);
  await flush();
  assert.equal(settled, false, "not before the answer");
  socket.deliver(JSON.stringify({ type: "conversation_started" }));
  await first;
  assert.equal(started, 1);
  assert.equal(relay.session.conversationPending, false);

  const refused = relay.newConversation();
  socket.deliver(JSON.stringify({ type: "error", code: "internal_error", message: "try again" }));
  await assert.rejects(refused, (error) => error.code === "internal_error" && /try again/.test(error.message));
  assert.equal(relay.session.conversationPending, false);
});

test("client: the sink's stall and link events come out as the turn's, until the turn ends", async () => {
  const fixture = byName("complete turn, audio cut on sample boundaries");
  const { relay } = await client();
  const ctx = {
    currentTime: 0,
    state: "running",
    destination: {},
    createBuffer: (_channels, frames) => ({ data: new Float32Array(frames), getChannelData() { return this.data; } }),
    createBufferSource: () => ({ buffer: null, onended: null, connect() {}, disconnect() {}, start() {}, stop() {} }),
  };
  const clock = { now: 0 };
  const timers = { setTimeout: () => null, clearTimeout: () => undefined };
  const sink = new WebAudioSink({ createContext: () => ctx, clock: () => clock.now, timers });
  const turn = relay.send("hi", { turnId: TURN_ID, sink });
  const seen = { stall: [], link: [] };
  turn.on("stall", (e) => seen.stall.push(e));
  turn.on("link", (e) => seen.link.push(e));
  for (const step of fixture.steps) {
    ctx.currentTime += 10; // every message comes long after the audio before it has played: a stall each
    clock.now += 10;
    FakeSocket.all[0].deliver(step.receive);
  }
  await turn.done;
  assert.equal(seen.link.length, 1);
  assert.equal(seen.link[0].slow, false, "no link measured before the first turn: it starts at once");
  assert.ok(seen.stall.length > 0);
  assert.equal(seen.stall.length, sink.stalls);
  assert.equal(sink.underruns, sink.stalls);
  sink.emit("stall", { durationS: 1, playedS: 0, underruns: 0 }); // after the end: no longer the turn's
  assert.equal(seen.stall.length, sink.stalls);
});
