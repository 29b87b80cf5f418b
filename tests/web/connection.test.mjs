// Connection (clients/js/src/connection.js) on a scripted WebSocket and manual timers: the token in the query
// string, the outbox, reconnect with jittered backoff and resume, gaps, stall resumes, dead-socket probes, token
// refresh, wake(), close().
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { Connection, jwtExp, tokenExpiresWithin, withToken } from "../../clients/js/src/connection.js";
import { ClientSession, STALL_RESUME_MS } from "../../clients/js/src/session.js";
import { FakeSocket, ManualTimers, flush } from "./fakes.mjs";

const cases = JSON.parse(readFileSync(new URL("./fixtures/client_session_cases.json", import.meta.url), "utf8"));
const TURN_ID = "t-fixture0000000000000001";
const inputs = cases[0].steps.map((s) => s.receive);

/** A JWT-shaped token with the given exp (s since the epoch); the signature is not checked by the client. */
function jwt(exp, sub = "u1") {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${b64({ alg: "RS256" })}.${b64({ sub, exp })}.sig`;
}

function setup(overrides = {}) {
  FakeSocket.all = [];
  const timers = new ManualTimers();
  const events = [];
  const states = [];
  const tokens = [];
  const session = new ClientSession();
  const connection = new Connection({
    url: "ws://127.0.0.1:9/ws",
    getToken: () => {
      const token = overrides.token?.(tokens.length) ?? `a.b.c${tokens.length}`;
      tokens.push(token);
      return token;
    },
    session,
    onEvent: (e) => events.push(e),
    onState: (s) => states.push(s),
    WebSocket: /** @type {any} */ (FakeSocket),
    timers,
    stallMs: null,
    random: () => 0.5,
    ...overrides.options,
  });
  return { connection, session, events, states, timers, tokens };
}

async function opened(connection) {
  connection.connect();
  await flush();
  const socket = FakeSocket.all.at(-1);
  socket.open();
  return socket;
}

test("connection: the token travels URL-encoded in the query string", async () => {
  const { connection } = setup({ token: () => "a+b/c=" });
  connection.connect();
  await flush();
  assert.equal(FakeSocket.all[0].url, "ws://127.0.0.1:9/ws?token=a%2Bb%2Fc%3D");
  assert.equal(withToken("wss://h/prod?x=1#f", "t"), "wss://h/prod?x=1&token=t");
});

test("connection: a message sent while connecting waits for the open socket", async () => {
  const { connection, session } = setup();
  connection.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }), TURN_ID);
  await flush();
  assert.deepEqual(FakeSocket.all[0].sent, []);
  FakeSocket.all[0].open();
  assert.deepEqual(FakeSocket.all[0].sentJson().map((m) => m.action), ["sendMessage"], "sent, not resumed");
});

test("connection: a drop reconnects after a jittered backoff and resumes from the last seq held", async () => {
  const { connection, session, events, states, timers, tokens } = setup();
  const first = await opened(connection);
  connection.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }), TURN_ID);
  for (const m of inputs.slice(0, 10)) first.deliver(m);
  first.close(1006);
  assert.equal(states.at(-1), "reconnecting");
  assert.deepEqual(timers.pending(), [125], "attempt 0: random 0.5 × min(8000, 250)");
  timers.advance(125);
  await flush();
  const second = FakeSocket.all[1];
  second.open();
  const held = session.turns.get(TURN_ID).lastSeq;
  assert.ok(held > 0);
  assert.deepEqual(second.sentJson(), [{ action: "resume", turn_id: TURN_ID, after_seq: held }]);
  for (const m of inputs.slice(5)) second.deliver(m); // the replay overlaps what was held: applied once
  assert.equal(events.at(-1).type, "turn_ended");
  assert.equal(events.at(-1).outcome, "completed");
  assert.equal(events.filter((e) => e.type === "text_received").map((e) => e.text).join(""), cases[0].expect.text);
  assert.deepEqual([connection.drops, connection.reconnects, tokens.length], [1, 1, 1], "a good token is reused");
});

test("connection: backoff doubles to its cap, with full jitter, and gives up after maxAttempts", async () => {
  const randoms = [0.999, 0.999, 0.999, 0.999, 0.999, 0.999, 0.0];
  const { connection, timers, states } = setup({ options: { random: () => randoms.shift() ?? 0.5, backoff: { maxAttempts: 7 } } });
  await opened(connection);
  FakeSocket.all[0].close(1006);
  const delays = [];
  for (let i = 0; i < 7; i++) {
    delays.push(timers.pending()[0]);
    timers.advance(timers.pending()[0]);
    await flush();
    FakeSocket.all.at(-1).refuse();
  }
  assert.deepEqual(delays, [249, 499, 999, 1998, 3996, 7992, 0]);
  assert.equal(states.at(-1), "closed");
  assert.equal(timers.pending().length, 0);
  connection.wake(); // the app is back: try again at once
  await flush();
  FakeSocket.all.at(-1).open();
  assert.equal(connection.state, "open");
});

test("connection: a refused handshake (a 401 looks like this) gets a fresh token before the next dial", async () => {
  const { connection, timers, tokens } = setup();
  connection.connect();
  await flush();
  FakeSocket.all[0].refuse();
  timers.advance(timers.pending()[0]);
  await flush();
  assert.deepEqual(tokens, ["a.b.c0", "a.b.c1"]);
  assert.ok(FakeSocket.all[1].url.endsWith("token=a.b.c1"));
});

test("connection: a token that expired mid-conversation is refreshed before the reconnect", async () => {
  let now = 1_000_000_000_000;
  const { connection, timers, tokens } = setup({
    token: (n) => jwt(now / 1000 + 60, `u${n}`),
    options: { now: () => now },
  });
  await opened(connection);
  FakeSocket.all[0].close(1006);
  timers.advance(timers.pending()[0]);
  await flush();
  assert.equal(tokens.length, 1, "still valid: reused");
  FakeSocket.all[1].open();
  now += 55_000; // within the 10 s skew of exp
  FakeSocket.all[1].close(1006);
  timers.advance(timers.pending()[0]);
  await flush();
  assert.equal(tokens.length, 2, "about to expire: refreshed");
  assert.equal(jwtExp(tokens[1]), now / 1000 + 60);
  assert.equal(tokenExpiresWithin(tokens[1], now, 10_000), false);
  assert.equal(jwtExp("not a jwt"), null);
});

test("connection: a getToken() failure is retried with backoff", async () => {
  let fail = true;
  FakeSocket.all = [];
  const timers = new ManualTimers();
  const connection = new Connection({
    url: "ws://h/ws",
    getToken: async () => {
      if (fail) throw new Error("offline");
      return "t";
    },
    session: new ClientSession(),
    onEvent: () => undefined,
    WebSocket: /** @type {any} */ (FakeSocket),
    timers,
    random: () => 0,
  });
  const states = [];
  connection._onState = (s, d) => states.push(`${s}: ${d}`);
  connection.connect();
  await flush();
  assert.match(states.at(-1), /getToken\(\) failed: offline/);
  assert.equal(FakeSocket.all.length, 0);
  fail = false;
  timers.advance(0);
  await flush();
  assert.equal(FakeSocket.all.length, 1);
});

test("connection: a gap on a live connection asks for a resume on the same connection", async () => {
  const { connection, session } = setup();
  const socket = await opened(connection);
  connection.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }), TURN_ID);
  for (const m of inputs.slice(0, 6)) socket.deliver(m);
  for (const m of inputs.slice(7, 10)) socket.deliver(m);
  const resumes = socket.sentJson().filter((m) => m.action === "resume");
  assert.deepEqual(resumes, [{ action: "resume", turn_id: TURN_ID, after_seq: session.turns.get(TURN_ID).lastSeq }]);
});

test("connection: no resume after a drop when no turn runs, and no reconnect after close()", async () => {
  const { connection, timers } = setup();
  await opened(connection);
  connection.dropConnection();
  timers.advance(timers.pending()[0]);
  await flush();
  FakeSocket.all[1].open();
  assert.deepEqual(FakeSocket.all[1].sent, []);
  connection.close();
  assert.equal(timers.pending().length, 0);
  assert.equal(connection.state, "closed");
  connection.wake();
  await flush();
  assert.equal(FakeSocket.all.length, 2);
});

test("connection: a turn silent for STALL_RESUME_MS is resumed on the open socket", async () => {
  const { connection, session, timers } = setup({ options: { stallMs: STALL_RESUME_MS } });
  const socket = await opened(connection);
  connection.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }), TURN_ID);
  const resumes = () => socket.sentJson().filter((m) => m.action === "resume");
  timers.advance(STALL_RESUME_MS * 3);
  assert.deepEqual(resumes(), [], "not before turn_accepted: the gateway may still be starting the turn");
  for (const m of inputs.slice(0, 6)) socket.deliver(m);
  timers.advance(STALL_RESUME_MS - 1);
  socket.deliver(inputs[6]); // a message restarts the silence
  timers.advance(STALL_RESUME_MS - 1);
  assert.deepEqual(resumes(), []);
  timers.advance(1);
  assert.deepEqual(resumes(), [{ action: "resume", turn_id: TURN_ID, after_seq: session.turns.get(TURN_ID).lastSeq }]);
  assert.equal(connection.stallResumes, 1);
  socket.deliver(inputs[7]); // answered: the socket is alive
  for (const m of inputs.slice(8)) socket.deliver(m);
  timers.advance(STALL_RESUME_MS * 3);
  assert.equal(resumes().length, 1, "a finished turn is never resumed");
  assert.equal(FakeSocket.all.length, 1, "the same connection throughout");
});

test("connection: a resume nobody answers (a half-open socket after a network switch) replaces the socket", async () => {
  const { connection, session, timers } = setup({ options: { probeMs: 5000 } });
  const socket = await opened(connection);
  connection.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }), TURN_ID);
  for (const m of inputs.slice(0, 6)) socket.deliver(m);
  connection.wake(); // e.g. the app came back to the foreground
  assert.equal(socket.sentJson().at(-1).action, "resume");
  timers.advance(4999);
  assert.equal(socket.readyState, FakeSocket.OPEN);
  timers.advance(1);
  assert.equal(socket.readyState, FakeSocket.CLOSED);
  assert.equal(connection.deadSockets, 1);
  timers.advance(timers.pending()[0]);
  await flush();
  FakeSocket.all[1].open();
  assert.deepEqual(FakeSocket.all[1].sentJson(), [{ action: "resume", turn_id: TURN_ID, after_seq: session.turns.get(TURN_ID).lastSeq }]);
});

test("connection: wake() while waiting to retry dials at once", async () => {
  const { connection, timers } = setup({ options: { random: () => 0.99 } });
  await opened(connection);
  FakeSocket.all[0].close(1006);
  assert.equal(timers.pending().length, 1);
  connection.wake();
  await flush();
  assert.equal(FakeSocket.all.length, 2);
  assert.equal(connection._reconnectTimer, null, "the backoff timer is cancelled");
  assert.deepEqual(timers.pending(), [15_000], "only the new handshake's deadline");
});

test("connection: an unauthorized rejection reconnects with a fresh token", async () => {
  const { connection, timers, tokens } = setup();
  const socket = await opened(connection);
  socket.deliver(JSON.stringify({ type: "error", code: "unauthorized", message: "reconnect with a fresh token" }));
  timers.advance(0);
  assert.equal(socket.readyState, FakeSocket.CLOSED);
  timers.advance(timers.pending()[0]);
  await flush();
  assert.equal(tokens.length, 2);
});

test("connection: a sendMessage lost in a drop (resume answered unknown_turn) is sent again, not given up", async () => {
  const { connection, session, events, timers } = setup();
  const first = await opened(connection);
  const message = session.sendMessage({ prompt: "hi", turnId: TURN_ID });
  connection.send(message, TURN_ID);
  first.close(1006); // before turn_accepted: did the gateway get it?
  timers.advance(timers.pending()[0]);
  await flush();
  const second = FakeSocket.all[1];
  second.open();
  assert.deepEqual(second.sentJson(), [{ action: "resume", turn_id: TURN_ID, after_seq: -1 }]);
  second.deliver(JSON.stringify({ type: "error", code: "unknown_turn", message: "no such turn", turn_id: TURN_ID }));
  assert.deepEqual(second.sent.at(-1), message, "sent again, same turn id");
  assert.equal(connection.resends, 1);
  assert.equal(session.turns.get(TURN_ID).finished, false);
  assert.deepEqual(events, [], "the unknown_turn answer is not passed on");
  for (const m of inputs) second.deliver(m);
  assert.equal(events.at(-1).outcome, "completed");
  // Once the turn was heard of, an unknown_turn is the session's to judge (a later resume of a lost turn expires).
  assert.equal(connection._unconfirmed.size, 0);
});

test("connection: a refused handshake reported by an error alone (Node 20's WebSocket) is a failed dial", async () => {
  const { connection, timers, tokens } = setup();
  connection.connect();
  await flush();
  FakeSocket.all[0].onerror?.({}); // no close follows, the socket stays CONNECTING
  assert.equal(connection.state, "reconnecting");
  timers.advance(timers.pending().filter((ms) => ms < 15_000)[0]);
  await flush();
  assert.equal(FakeSocket.all.length, 2);
  assert.equal(tokens.length, 2, "a fresh token for the next dial");
});

test("connection: a handshake that hangs is abandoned after connectTimeoutMs and retried", async () => {
  const { connection, timers } = setup({ options: { connectTimeoutMs: 3000 } });
  connection.connect();
  await flush();
  timers.advance(2999);
  assert.equal(FakeSocket.all.length, 1);
  timers.advance(1);
  assert.equal(FakeSocket.all[0].readyState, FakeSocket.CLOSED);
  timers.advance(1000);
  await flush();
  assert.equal(FakeSocket.all.length, 2);
});

test("connection: networkLost() drops the socket now; the reconnect resumes", async () => {
  const { connection, session, timers } = setup();
  const socket = await opened(connection);
  connection.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }), TURN_ID);
  for (const m of inputs.slice(0, 6)) socket.deliver(m);
  connection.networkLost();
  assert.equal(socket.readyState, FakeSocket.CLOSED);
  assert.equal(connection.state, "reconnecting");
  connection.wake(); // online again
  await flush();
  FakeSocket.all[1].open();
  assert.equal(FakeSocket.all[1].sentJson()[0].action, "resume");
  assert.equal(timers.pending().length, 0);
});
