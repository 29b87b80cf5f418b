// The protocol's limits in @kokoro-relay/client (clients/js/src/session.js, connection.js, client.js): a message
// over them is refused before sending and its turn ends at once with limit_exceeded; a message the gateway closed
// the connection over (1009) ends its turn instead of being resumed and sent again for ever.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ClientSession,
  LimitExceededError,
  MAX_PROMPT_CHARS,
  MAX_SEND_BYTES,
  MESSAGE_TOO_BIG,
  PcmSink,
  connect,
  utf8Length,
} from "../../clients/js/src/index.js";
import { FakeSocket, ManualTimers, flush } from "./fakes.mjs";

const TURN_ID = "t-fixture0000000000000001";
/** Under MAX_PROMPT_CHARS, but over 32 KB in UTF-8 (3 bytes a character). */
const WIDE_PROMPT = "語".repeat(Math.ceil(MAX_SEND_BYTES / 3));

async function client(options = {}) {
  FakeSocket.all = [];
  const timers = new ManualTimers();
  const relay = connect({ url: "ws://h/ws", getToken: () => "tok", WebSocket: /** @type {any} */ (FakeSocket), timers, random: () => 0, ...options });
  await flush();
  FakeSocket.all[0].open();
  return { relay, timers };
}

/** @param {import("../../clients/js/src/client.js").Turn} turn */
function record(turn) {
  const seen = /** @type {string[]} */ ([]);
  turn.on("error", (e) => seen.push(`error:${e.code}:${e.outcome}`));
  turn.on("end", (e) => seen.push(`end:${e.outcome}`));
  return seen;
}

test("limits: utf8Length counts what the gateway counts", () => {
  for (const text of ["", "plain", "é日🎙", "語".repeat(100), "\ud800 lone", '{"prompt":"\\"x\\""}']) {
    assert.equal(utf8Length(text), Buffer.byteLength(text, "utf8"), JSON.stringify(text));
  }
});

test("limits: sendMessage refuses a prompt over MAX_PROMPT_CHARS (code points) and records nothing", () => {
  const session = new ClientSession({ maxSendBytes: 128 * 1024 });
  const refused = () => session.sendMessage({ prompt: "x".repeat(MAX_PROMPT_CHARS + 1), turnId: TURN_ID });
  assert.throws(refused, (err) => err instanceof LimitExceededError && err.code === "limit_exceeded" && /the limit is 20000/.test(err.message));
  assert.equal(session.turns.size, 0);
  // an emoji is one character, as relay_core counts (two UTF-16 units in JS)
  assert.equal(JSON.parse(session.sendMessage({ prompt: "😀".repeat(MAX_PROMPT_CHARS), turnId: TURN_ID })).turn_id, TURN_ID);
});

test("limits: sendMessage refuses a message over one gateway frame, to the byte, and records nothing", () => {
  const session = new ClientSession();
  assert.throws(() => session.sendMessage({ prompt: WIDE_PROMPT }), /sendMessage is \d+ bytes; one WebSocket frame to the gateway holds 32768: shorten/);
  assert.equal(session.turns.size, 0);
  assert.equal(session.current, null);
  const room = MAX_SEND_BYTES - utf8Length(new ClientSession().sendMessage({ prompt: "", turnId: TURN_ID }));
  const fits = "é".repeat(Math.floor(room / 2)) + "a".repeat(room % 2); // 2 bytes a character, under MAX_PROMPT_CHARS
  assert.equal(Buffer.byteLength(session.sendMessage({ prompt: fits, turnId: TURN_ID })), MAX_SEND_BYTES);
  assert.throws(() => session.sendMessage({ prompt: fits + "a", turnId: "t-fixture0000000000000002" }), /32769 bytes/);
  assert.deepEqual([...session.turns.keys()], [TURN_ID]);
});

test("limits: closedTooBig ends an unfinished turn (rejected, limit_exceeded) so it is not resumed", () => {
  const session = new ClientSession();
  session.sendMessage({ prompt: "hi", turnId: TURN_ID });
  const [ended] = session.closedTooBig(TURN_ID, 40_000);
  assert.equal(ended.type, "turn_ended");
  assert.deepEqual([ended.outcome, ended.code], ["rejected", "limit_exceeded"]);
  assert.match(ended.message, /1009.*40000-byte sendMessage.*32768 bytes in one WebSocket frame: shorten the prompt/);
  assert.deepEqual(session.resumeAll(), []);
  assert.deepEqual(session.closedTooBig(TURN_ID, 40_000), [], "once");
  assert.deepEqual(session.closedTooBig("t-unknown", 1), []);
});

test("limits: a turn over the limits is never sent and ends at once with limit_exceeded; later turns go out", async () => {
  let stopped = 0;
  const sink = new PcmSink({ onPcm: () => undefined, onStop: () => (stopped += 1) });
  const { relay } = await client({ sink });
  const turn = relay.send(WIDE_PROMPT, { turnId: TURN_ID });
  const seen = record(turn); // listening after send() returns still hears the end
  const result = await turn.done;
  assert.deepEqual(seen, ["error:limit_exceeded:rejected", "end:rejected"]);
  assert.deepEqual([result.outcome, result.code], ["rejected", "limit_exceeded"]);
  assert.match(result.message ?? "", /shorten the prompt/);
  assert.deepEqual(FakeSocket.all[0].sent, [], "nothing was sent");
  assert.equal(stopped, 0, "the client's sink (maybe still playing the previous reply) is left alone");
  const long = relay.send("x".repeat(MAX_PROMPT_CHARS + 1));
  assert.equal((await long.done).code, "limit_exceeded");
  relay.send("hi");
  assert.deepEqual(FakeSocket.all[0].sentJson().map((m) => m.prompt), ["hi"]);
});

test("limits: a 1009 close ends the turn whose message it was, never resends it, and reconnects for later turns", async () => {
  const { relay, timers } = await client({ maxSendBytes: 128 * 1024 }); // sends over-limit messages raw
  const turn = relay.send(WIDE_PROMPT, { turnId: TURN_ID });
  const seen = record(turn);
  assert.equal(FakeSocket.all[0].sent.length, 1);
  FakeSocket.all[0].close(MESSAGE_TOO_BIG); // what API Gateway does with a frame over 32 KB
  assert.deepEqual(seen, ["error:limit_exceeded:rejected", "end:rejected"]);
  const result = await turn.done;
  assert.match(result.message ?? "", /^the gateway closed the connection \(1009, message too big\) over this turn's \d+-byte sendMessage/);
  assert.equal(relay.stats.tooBig, 1);
  timers.advance(0);
  await flush();
  assert.equal(FakeSocket.all.length, 2, "the connection is re-established");
  FakeSocket.all[1].open();
  assert.deepEqual(FakeSocket.all[1].sent, [], "the refused turn is neither resumed nor sent again");
  relay.send("hi");
  assert.deepEqual(FakeSocket.all[1].sentJson().map((m) => m.prompt), ["hi"]);
  relay.close();
});

test("limits: a 1009 close of a sendMessage sent again after a drop ends that turn too", async () => {
  const { relay, timers } = await client({ maxSendBytes: 128 * 1024 });
  const turn = relay.send(WIDE_PROMPT, { turnId: TURN_ID });
  FakeSocket.all[0].close(1006); // dropped before turn_accepted: the library resumes, then sends it again
  timers.advance(0);
  await flush();
  const second = FakeSocket.all[1];
  second.open();
  assert.deepEqual(second.sentJson().map((m) => m.action), ["resume"]);
  second.deliver(JSON.stringify({ type: "error", code: "unknown_turn", message: "no such turn", turn_id: TURN_ID }));
  assert.deepEqual(second.sentJson().map((m) => m.action), ["resume", "sendMessage"]);
  second.close(MESSAGE_TOO_BIG);
  assert.equal((await turn.done).code, "limit_exceeded");
  timers.advance(0);
  await flush();
  FakeSocket.all[2].open();
  assert.deepEqual(FakeSocket.all[2].sent, []);
  relay.close();
});

test("limits: a 1009 close with no sendMessage of its own is an ordinary drop: the turn is resumed", async () => {
  const { relay, timers } = await client();
  const turn = relay.send("hi", { turnId: TURN_ID });
  FakeSocket.all[0].deliver(JSON.stringify({ type: "turn_accepted", turn_id: TURN_ID }));
  FakeSocket.all[0].close(MESSAGE_TOO_BIG);
  assert.equal(turn.finished, false);
  timers.advance(0);
  await flush();
  FakeSocket.all[1].open();
  assert.deepEqual(FakeSocket.all[1].sentJson(), [{ action: "resume", turn_id: TURN_ID, after_seq: -1 }]);
  relay.close();
});
