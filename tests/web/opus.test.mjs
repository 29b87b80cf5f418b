// Opus on the client (clients/js/src/opus.js, the session's opus_received, the Turn's decoding): recorded packets of a
// known tone (tests/web/fixtures/opus_tone.json, written by tests/web/opus_fixtures.py with PyAV's libopus) decode
// with the WebAssembly decoder (opus-decoder, what Node uses) to exactly each chunk's [sample_offset, +samples) on the
// PCM timeline, matching libopus's own decode and the source tone; through the client, a PcmSink gets PCM, in order,
// across a dropped connection and its resume (one decoder per turn); a WebAudioSink is told when each chunk arrived,
// before its decoding (the link is timed by arrivals).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  ClientSession,
  OpusStream,
  PcmSink,
  WebAudioSink,
  base64ToBytes,
  chooseOpusDecoder,
  connect,
  splitPackets,
  wasmOpusFactory,
} from "../../clients/js/src/index.js";
import { FakeSocket, ManualTimers, flush } from "./fakes.mjs";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/opus_tone.json", import.meta.url), "utf8"));
const messages = fixture.messages.map((m) => JSON.parse(m));
const chunks = messages.filter((m) => m.type === "audio_chunk");
const int16 = (b64) => {
  const bytes = base64ToBytes(b64);
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
};
const source = int16(fixture.source_pcm);
const expected = fixture.expected_pcm.map(int16);

/** Signal-to-noise ratio of `got` against `want`, in dB. */
function snrDb(want, got) {
  assert.equal(got.length, want.length);
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < want.length; i++) {
    signal += want[i] * want[i];
    noise += (want[i] - got[i]) ** 2;
  }
  return noise === 0 ? Infinity : 10 * Math.log10(signal / noise);
}

function concat(parts) {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** libopus's decode vs the library's: the same decoder (libopus in WebAssembly), so near-identical. */
const MIN_SNR_VS_LIBOPUS_DB = 40;
/** vs the source tone at 24 kbit/s: a decode off by pre_skip (156 samples) scores below 6 dB here, the right one ~9.5. */
const MIN_SNR_VS_SOURCE_DB = 8;

test("opus: splitPackets cuts at packet_bytes and refuses sizes that do not add up", () => {
  const bytes = new Uint8Array([1, 2, 3, 4, 5]);
  assert.deepEqual(splitPackets(bytes, [2, 3]).map((p) => [...p]), [[1, 2], [3, 4, 5]]);
  assert.throws(() => splitPackets(bytes, [2, 2]), /add up to 4 but data has 5/);
  assert.throws(() => splitPackets(bytes, []), /non-empty packet_bytes/);
  assert.throws(() => splitPackets(bytes, [0, 5]), /positive byte count/);
});

test("opus: the WebAssembly decoder gives each chunk exactly its PCM-timeline samples, as libopus does", async () => {
  const factory = await wasmOpusFactory();
  assert.ok(factory, "opus-decoder is installed (npm ci in clients/js)");
  const start = messages.find((m) => m.type === "audio_stream_start");
  const stream = new OpusStream({ factory, preSkip: start.pre_skip });
  const got = [];
  for (const [i, chunk] of chunks.entries()) {
    const packets = splitPackets(base64ToBytes(chunk.data), chunk.packet_bytes);
    const pcm = await stream.decodeChunk({ packets, sampleOffset: chunk.sample_offset, samples: chunk.samples });
    assert.equal(pcm.length, chunk.samples, `chunk ${i}: samples`);
    assert.equal(pcm.length, expected[i].length, `chunk ${i}: libopus's length`);
    got.push(pcm);
  }
  stream.close();
  const all = concat(got);
  assert.equal(all.length, fixture.total_samples, "the chunks tile [0, total_samples)");
  assert.ok(snrDb(concat(expected), all) >= MIN_SNR_VS_LIBOPUS_DB, `vs libopus: ${snrDb(concat(expected), all).toFixed(1)} dB`);
  assert.ok(snrDb(source, all) >= MIN_SNR_VS_SOURCE_DB, `vs the source: ${snrDb(source, all).toFixed(1)} dB`);
});

test("opus: the session asks for opus only when told, refuses other formats, and checks Opus chunks", () => {
  const session = new ClientSession();
  assert.equal(JSON.parse(session.sendMessage({ prompt: "a", turnId: "t-a" })).audio, undefined, "pcm: nothing on the wire");
  assert.equal(JSON.parse(session.sendMessage({ prompt: "a", turnId: "t-b", audio: "opus" })).audio, "opus");
  assert.throws(() => session.sendMessage({ prompt: "a", turnId: "t-c", audio: "mp3" }), /audio must be one of pcm, opus/);
  assert.equal(session.turns.has("t-c"), false);

  const fresh = new ClientSession();
  const events = messages.flatMap((m) => fresh.receive(JSON.stringify(m)));
  const opus = events.filter((e) => e.type === "opus_received");
  assert.deepEqual(opus.map((e) => [e.sampleOffset, e.sampleCount]), chunks.map((c) => [c.sample_offset, c.samples]));
  assert.equal(fresh.turns.get(fixture.turn_id).samples, fixture.total_samples);
  assert.equal(events.filter((e) => e.type === "protocol_error").length, 0);

  const bad = new ClientSession();
  bad.receive(fixture.messages[0]);
  bad.receive(fixture.messages[1]);
  const wrong = { ...chunks[0], packet_bytes: [1] };
  assert.equal(bad.receive(JSON.stringify(wrong))[0].type, "protocol_error", "packet_bytes that do not add up");
  const noCount = { ...chunks[0], samples: undefined };
  assert.equal(bad.receive(JSON.stringify(noCount))[0].type, "protocol_error", "an Opus chunk without samples");
});

test("opus: without any decoder the choice is PCM and says why", async () => {
  const choice = await chooseOpusDecoder(null, "no-such-opus-decoder-package");
  assert.equal(choice.factory, null);
  assert.match(choice.reason, /no Opus decoder here.*asking for PCM/);
  assert.equal((await chooseOpusDecoder(null)).name, "wasm", "Node: the opus-decoder package");
});

test("opus: connect({audio: 'opus'}) asks for Opus; the sink gets PCM in order across a drop and resume", async () => {
  FakeSocket.all = [];
  const timers = new ManualTimers();
  const relay = connect({ url: "ws://h/ws", getToken: () => "tok", WebSocket: /** @type {any} */ (FakeSocket), timers, random: () => 0, audio: "opus" });
  assert.deepEqual(await relay.audioReady, { format: "opus", decoder: "wasm", reason: null });
  await flush();
  FakeSocket.all[0].open();
  const written = [];
  const sink = new PcmSink({ onPcm: (samples, offset) => written.push({ samples, offset }) });
  const turn = relay.send("hum", { turnId: fixture.turn_id, sink });
  assert.equal(turn.audio, "opus");
  assert.equal(FakeSocket.all[0].sentJson()[0].audio, "opus");
  const order = [];
  turn.on("audio", (e) => order.push(`audio:${e.seq}`));
  turn.on("audioEnd", () => order.push("audioEnd"));
  turn.on("end", () => order.push("end"));

  let socket = FakeSocket.all[0];
  socket.deliver(JSON.stringify({ type: "turn_accepted", turn_id: fixture.turn_id }));
  const cut = 4; // the network drops after message 4; 5 and 6 are lost, 7 arrives on a dying socket (a gap)
  for (const m of messages.slice(0, cut + 1)) socket.deliver(JSON.stringify(m));
  socket.deliver(JSON.stringify(messages[cut + 3]));
  socket.close(1006);
  timers.advance(0);
  await flush();
  socket = FakeSocket.all.at(-1);
  socket.open();
  assert.deepEqual(socket.sentJson(), [{ action: "resume", turn_id: fixture.turn_id, after_seq: cut }]);
  socket.deliver(JSON.stringify({ type: "turn_accepted", turn_id: fixture.turn_id }));
  for (const m of messages.slice(cut + 1)) socket.deliver(JSON.stringify(m)); // the replay
  const result = await turn.done;

  assert.equal(result.outcome, "completed");
  assert.equal(result.samples, fixture.total_samples);
  assert.deepEqual(order, [...chunks.map((c) => `audio:${c.seq}`), "audioEnd", "end"], "in order, once each, end last");
  assert.deepEqual(written.map((w) => [w.offset, w.samples.length]), chunks.map((c) => [c.sample_offset, c.samples]));
  const all = concat(written.map((w) => w.samples));
  assert.ok(snrDb(concat(expected), all) >= MIN_SNR_VS_LIBOPUS_DB, "one decoder across the resume");
  relay.close();
});

test("opus: a turn may ask for PCM on an Opus client, and for Opus on a PCM one", async () => {
  FakeSocket.all = [];
  const relay = connect({ url: "ws://h/ws", getToken: () => "tok", WebSocket: /** @type {any} */ (FakeSocket), timers: new ManualTimers(), random: () => 0 });
  await relay.audioReady;
  await flush();
  FakeSocket.all[0].open();
  relay.send("a", { turnId: "t-1" });
  relay.send("b", { turnId: "t-2", audio: "opus" });
  assert.throws(() => relay.send("c", { turnId: "t-3", audio: /** @type {any} */ ("flac") }), /"pcm" or "opus"/);
  assert.deepEqual(FakeSocket.all[0].sentJson().map((m) => m.audio), [undefined, "opus"]);
  relay.close();
});

test("opus: the Turn tells the sink when each Opus chunk arrived, so the link is timed by arrivals, not by decoding", async () => {
  FakeSocket.all = [];
  const clock = { now: 0 };
  const relay = connect({ url: "ws://h/ws", getToken: () => "tok", WebSocket: /** @type {any} */ (FakeSocket), timers: new ManualTimers(), random: () => 0, audio: "opus" });
  await relay.audioReady;
  await flush();
  FakeSocket.all[0].open();
  const context = { currentTime: 0, state: "running", destination: {}, createBuffer: (_c, n) => ({ getChannelData: () => new Float32Array(n) }), createBufferSource: () => ({ buffer: null, onended: null, connect() {}, disconnect() {}, start() {}, stop() {} }) };
  const sink = new WebAudioSink({ createContext: () => /** @type {any} */ (context), clock: () => clock.now, startup: false });
  const turn = relay.send("hum", { turnId: fixture.turn_id, sink });
  const socket = FakeSocket.all[0];
  socket.deliver(JSON.stringify({ type: "turn_accepted", turn_id: fixture.turn_id }));
  const [first, second] = chunks;
  for (const m of messages) {
    if (m.type === "audio_chunk" && m.seq !== first.seq && m.seq !== second.seq) continue;
    clock.now = m.seq === second.seq ? 1 : 0; // the second chunk arrives 1 s after the first, both still decoding
    socket.deliver(JSON.stringify(m));
    if (m.seq === second.seq) break;
  }
  clock.now = 5; // both decoded and written now
  await flush();
  await flush();
  assert.equal(sink.sampleCount, first.samples + second.samples);
  const rate = /** @type {any} */ (sink)._arrivals.rate();
  assert.ok(Math.abs(rate - second.samples / 24000) < 1e-9, `rate ${rate}: the arrivals' (1 s apart), not the writes'`);
  relay.close();
  void turn;
});
