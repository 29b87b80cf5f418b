// @kokoro-relay/client in Node against the real local stack (RelayStack: the real gateway functions, the agent with
// the speak model, the Kokoro TTS), run by tests/web/test_client_node.py, which owns the stack and passes
// RELAY_GATEWAY_URL, RELAY_AGENT_URL, RELAY_TOKEN_URL (GET ?user=&ttl= -> {"token"}; beside it GET /model-request ->
// {"messages": [[role, text], ...]}, the agent's latest model request) and RELAY_RESUME_WINDOW_S.
// Without them (plain `node --test tests/web/`) these tests are skipped.
//
// The reference for "byte-identical" is the agent's own audio for the same prompt, read from its SSE stream
// directly (no gateway); the speak model replies with the prompt, and synthesis is deterministic.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { connect } from "../../../clients/js/src/index.js";
import { AgentDirectClient } from "../../../web/agent_direct.js";
import { FlakyNetwork } from "./network.mjs";

const env = process.env;
const LIVE = Boolean(env.RELAY_GATEWAY_URL && env.RELAY_AGENT_URL && env.RELAY_TOKEN_URL);
const skip = LIVE ? false : "needs the local stack: run by tests/web/test_client_node.py";
const RESUME_WINDOW_S = Number(env.RELAY_RESUME_WINDOW_S ?? 30);
const PROMPTS = ["Hello there.", "Short one.", "Yes, it works."];
const TURN_TIMEOUT_MS = 240_000;

/** @type {FlakyNetwork} */
let network;
/** @type {string} */
let gatewayUrl;
/** @type {Map<string, Buffer>} */
const reference = new Map();

/** @param {string} user @param {number} ttl */
async function mint(user, ttl = 3600) {
  const response = await fetch(`${env.RELAY_TOKEN_URL}?user=${encodeURIComponent(user)}&ttl=${ttl}`);
  assert.equal(response.status, 200);
  return (await response.json()).token;
}

/** The agent's PCM for a prompt, straight from its SSE stream. */
async function agentPcm(prompt) {
  const parts = [];
  let outcome = null;
  const direct = new AgentDirectClient({
    endpoint: `${env.RELAY_AGENT_URL}/invocations`,
    onEvent: (e) => {
      if (e.type === "audio_received") parts.push(Buffer.from(e.samples.buffer, e.samples.byteOffset, e.samples.byteLength));
      if (e.type === "turn_ended") outcome = e.outcome;
    },
  });
  await direct.run({ prompt, mode: "bidi", turnId: `t-ref-${Math.random().toString(36).slice(2, 10)}` });
  assert.equal(outcome, "completed");
  return Buffer.concat(parts);
}

/**
 * Everything a turn produced through the library, checked for order as it comes.
 * @param {import("../../../clients/js/src/client.js").Turn} turn
 */
function record(turn) {
  const got = { text: "", parts: /** @type {Buffer[]} */ ([]), samples: 0, totalSamples: -1, errors: /** @type {string[]} */ ([]), ends: 0 };
  turn.on("text", (e) => (got.text += e.text));
  turn.on("audio", (e) => {
    assert.equal(e.sampleOffset, got.samples, "audio is contiguous, once");
    got.samples += e.samples.length;
    got.parts.push(Buffer.from(e.samples.buffer, e.samples.byteOffset, e.samples.byteLength));
  });
  turn.on("audioEnd", (e) => (got.totalSamples = e.totalSamples));
  turn.on("error", (e) => got.errors.push(e.code));
  turn.on("end", () => (got.ends += 1));
  return got;
}

/** @param {Promise<any>} promise @param {string} what */
function within(promise, what, ms = TURN_TIMEOUT_MS) {
  let timer;
  const deadline = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no end within ${ms} ms`)), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** A client through the flaky network, closed by the test. */
function client(getToken, options = {}) {
  return connect({ url: gatewayUrl, getToken, WebSocket: globalThis.WebSocket, backoff: { baseMs: 100, maxMs: 1000, maxAttempts: 1000 }, ...options });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  if (!LIVE) return;
  assert.equal(typeof globalThis.WebSocket, "function", "run node with --experimental-websocket (Node 20) or Node >= 22");
  const target = new URL(env.RELAY_GATEWAY_URL);
  network = new FlakyNetwork(Number(target.port));
  const port = await network.listen();
  target.host = `127.0.0.1:${port}`;
  gatewayUrl = target.toString();
  for (const prompt of PROMPTS) reference.set(prompt, await agentPcm(prompt));
});

after(async () => {
  if (network) await network.close();
});

test("live: a turn's text and PCM equal the agent's, byte for byte", { skip }, async () => {
  const relay = client(() => mint("node-exact"));
  try {
    const turn = relay.send(PROMPTS[0]);
    const got = record(turn);
    const result = await within(turn.done, "turn");
    assert.equal(result.outcome, "completed");
    assert.equal(got.text, PROMPTS[0]);
    const pcm = Buffer.concat(got.parts);
    assert.ok(pcm.length > 24_000, "at least half a second of speech");
    assert.ok(pcm.equals(reference.get(PROMPTS[0])), "the gateway's audio is the agent's");
    assert.equal(got.totalSamples * 2, pcm.length);
    assert.equal(got.ends, 1);
  } finally {
    relay.close();
  }
});

/** Pearson correlation of two s16le buffers of the same length (tests/agent/test_opus_stream.py's measure). */
function correlation(a, b) {
  const x = new Int16Array(a.buffer, a.byteOffset, a.length / 2);
  const y = new Int16Array(b.buffer, b.byteOffset, b.length / 2);
  let mx = 0;
  let my = 0;
  for (let i = 0; i < x.length; i++) (mx += x[i]), (my += y[i]);
  mx /= x.length;
  my /= y.length;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < x.length; i++) {
    const dx = x[i] - mx;
    const dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxy / Math.sqrt(sxx * syy);
}

/** @type {Buffer | null} the first Opus turn's decoded PCM (the reference of the resumed one) */
let opusPcm = null;

test("live: an Opus turn, decoded by the WebAssembly decoder, is the PCM turn's audio: same length, the same sound", { skip }, async () => {
  const relay = client(() => mint("node-opus"), { audio: "opus" });
  try {
    assert.deepEqual(await relay.audioReady, { format: "opus", decoder: "wasm", reason: null });
    let wireBytes = 0;
    relay.on("event", (e) => {
      if (e.type === "opus_received") wireBytes += e.packets.reduce((n, p) => n + p.length, 0);
    });
    const turn = relay.send(PROMPTS[0]);
    assert.equal(turn.audio, "opus");
    const got = record(turn);
    const result = await within(turn.done, "opus turn");
    assert.equal(result.outcome, "completed", `${result.code} ${result.message}`);
    assert.equal(got.text, PROMPTS[0]);
    const pcm = Buffer.concat(got.parts);
    const ref = reference.get(PROMPTS[0]);
    assert.equal(pcm.length, ref.length, "the PCM timeline: exactly the PCM turn's samples");
    assert.equal(got.totalSamples * 2, pcm.length);
    assert.ok(wireBytes * 8 < pcm.length, `Opus is far smaller than PCM: ${wireBytes} vs ${pcm.length} bytes`);
    const r = correlation(pcm, ref);
    console.log(`opus turn: ${wireBytes} packet bytes for ${pcm.length} PCM bytes; correlation with the PCM ${r.toFixed(3)}`);
    assert.ok(r > 0.8, `correlation ${r}`);
    opusPcm = pcm;
  } finally {
    relay.close();
  }
});

test("live: an Opus turn cut mid-stream resumes with its decoder kept: the same PCM as uncut", { skip }, async () => {
  assert.ok(opusPcm, "runs after the Opus turn above");
  const relay = client(() => mint("node-opus-drop"), { audio: "opus" });
  try {
    await relay.audioReady;
    const turn = relay.send(PROMPTS[0]);
    const got = record(turn);
    let cut = false;
    turn.on("audio", () => {
      if (!cut) (cut = true), network.cut(); // after the first decoded chunk: the rest comes by resume
    });
    const result = await within(turn.done, "resumed opus turn");
    assert.equal(result.outcome, "completed", `${result.code} ${result.message}`);
    assert.ok(cut);
    assert.ok(relay.stats.drops >= 1, JSON.stringify(relay.stats));
    assert.ok(Buffer.concat(got.parts).equals(opusPcm), "one decoder across the resume, nothing lost or repeated");
  } finally {
    relay.close();
  }
});

test("live: the network cut at random points of 20 turns: every turn completes, byte-identical", { skip }, async () => {
  const seed = Number(env.RELAY_DROP_SEED ?? Date.now() % 100_000);
  let state = seed;
  const random = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32);
  console.log(`drop seed ${seed} (RELAY_DROP_SEED to replay)`);
  const relay = client(() => mint("node-drops"));
  const cutsBefore = network.cuts;
  try {
    for (let i = 0; i < 20; i++) {
      const prompt = PROMPTS[i % PROMPTS.length];
      const turn = relay.send(prompt);
      const got = record(turn);
      const cutAfterMs = Math.floor(random() * 1500);
      const cut = sleep(cutAfterMs).then(() => network.cut());
      const result = await within(turn.done, `turn ${i} (cut after ${cutAfterMs} ms)`);
      await cut;
      assert.equal(result.outcome, "completed", `turn ${i}: ${result.code} ${result.message}`);
      assert.equal(got.text, prompt, `turn ${i} text`);
      assert.ok(Buffer.concat(got.parts).equals(reference.get(prompt)), `turn ${i} PCM (cut after ${cutAfterMs} ms)`);
      assert.equal(got.ends, 1);
    }
    assert.equal(network.cuts - cutsBefore, 20);
    const stats = relay.stats;
    console.log(`20 turns: ${JSON.stringify(stats)}`);
    assert.ok(stats.drops >= 10, `most cuts hit an open connection: ${JSON.stringify(stats)}`);
    assert.ok(stats.reconnects >= stats.drops);
  } finally {
    relay.close();
  }
});

test("live: in the background past the resume window: resume_expired, then a new turn works", { skip }, async () => {
  const relay = client(() => mint("node-background"));
  try {
    const long = "The app goes to the background now. It stays there for a while. Then it comes back.";
    const turn = relay.send(long);
    const got = record(turn);
    await within(new Promise((resolve) => turn.on("audio", resolve)), "first audio");
    network.down(); // the OS suspends the app: its socket dies and nothing gets through
    await sleep((RESUME_WINDOW_S + 4) * 1000);
    network.up();
    relay.wake(); // back in the foreground
    const result = await within(turn.done, "expired turn");
    assert.equal(result.outcome, "expired");
    assert.equal(result.code, "resume_expired");
    assert.deepEqual(got.errors, ["resume_expired"]);
    assert.ok(got.samples > 0, "what was received stays");
    const next = relay.send(PROMPTS[1]);
    const again = record(next);
    assert.equal((await within(next.done, "next turn")).outcome, "completed");
    assert.ok(Buffer.concat(again.parts).equals(reference.get(PROMPTS[1])));
  } finally {
    relay.close();
  }
});

test("live: a message over 32 KB sent raw is closed by the gateway (1009): the turn ends, the next one completes", { skip }, async () => {
  // maxSendBytes raised: the library sends the over-limit message instead of refusing it, straight to the gateway
  const relay = connect({ url: env.RELAY_GATEWAY_URL, getToken: () => mint("node-too-big"), WebSocket: globalThis.WebSocket, maxSendBytes: 128 * 1024, backoff: { baseMs: 100, maxMs: 1000, maxAttempts: 1000 } });
  try {
    const turn = relay.send("語".repeat(11_000)); // 33 KB of UTF-8: over API Gateway's 32 KB frame
    const got = record(turn);
    const result = await within(turn.done, "the over-limit turn");
    assert.deepEqual([result.outcome, result.code], ["rejected", "limit_exceeded"]);
    assert.match(result.message ?? "", /1009, message too big/);
    assert.deepEqual(got.errors, ["limit_exceeded"]);
    assert.equal(relay.stats.tooBig, 1);
    const next = relay.send(PROMPTS[1]); // on the re-established connection
    const again = record(next);
    assert.equal((await within(next.done, "the next turn")).outcome, "completed");
    assert.ok(Buffer.concat(again.parts).equals(reference.get(PROMPTS[1])));
    assert.equal(relay.stats.tooBig, 1, "sent once, never again");
  } finally {
    relay.close();
  }
});

/** The (role, text) messages of the latest model request the agent made. */
async function modelRequest() {
  const response = await fetch(new URL("model-request", env.RELAY_TOKEN_URL));
  assert.equal(response.status, 200);
  return (await response.json()).messages;
}

test("live: newConversation(): the next turn's model request holds none of the earlier turns", { skip }, async () => {
  const relay = client(() => mint("node-new-conversation"));
  try {
    for (const prompt of PROMPTS.slice(0, 2)) assert.equal((await within(relay.send(prompt).done, prompt)).outcome, "completed");
    const said = (messages) => messages.filter(([role]) => role === "user").map(([, text]) => text);
    assert.deepEqual(said(await modelRequest()), PROMPTS.slice(0, 2), "the conversation goes on before");
    await within(relay.newConversation(), "newConversation");
    assert.equal((await within(relay.send(PROMPTS[2]).done, "after")).outcome, "completed");
    assert.deepEqual(await modelRequest(), [["user", PROMPTS[2]]]);
  } finally {
    relay.close();
  }
});

test("live: a refused token (the handshake's 401) is replaced by a fresh one from getToken()", { skip }, async () => {
  const handed = [];
  const relay = client(async () => {
    const token = handed.length === 0 ? "not-a-jwt" : await mint("node-token-401");
    handed.push(token);
    return token;
  });
  try {
    const turn = relay.send(PROMPTS[0]);
    assert.equal((await within(turn.done, "turn")).outcome, "completed");
    assert.equal(handed.length, 2, "the refused token was replaced once");
  } finally {
    relay.close();
  }
});

test("live: a token that expires mid-conversation is refreshed on the reconnect, and the turn resumes", { skip }, async () => {
  const handed = [];
  const relay = client(
    async () => {
      const token = await mint("node-token-expiry", handed.length === 0 ? 3 : 3600);
      handed.push(token);
      return token;
    },
    { tokenSkewMs: 0 },
  );
  try {
    const mintedAt = Date.now();
    const first = relay.send(PROMPTS[1]);
    assert.equal((await within(first.done, "first turn")).outcome, "completed");
    await sleep(Math.max(0, mintedAt + 3500 - Date.now())); // the token has expired now
    const turn = relay.send(PROMPTS[2]);
    const got = record(turn);
    await within(new Promise((resolve) => turn.on("audio", resolve)), "first audio");
    network.cut(); // the socket dies mid-turn; the cached token is no longer valid
    const result = await within(turn.done, "turn across the expiry");
    assert.equal(result.outcome, "completed");
    assert.ok(Buffer.concat(got.parts).equals(reference.get(PROMPTS[2])));
    assert.equal(handed.length, 2, "one refresh");
    assert.deepEqual([relay.stats.drops, relay.stats.reconnects], [1, 1], "refreshed before dialling: no refused handshake");
  } finally {
    relay.close();
  }
});
