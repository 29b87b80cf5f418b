// GatewayClient (web/gateway.js) on a scripted WebSocket stand-in: token in the query string, resume after a
// drop, resume on a gap, outbox while connecting, and no reconnect after close().
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ClientSession, STALL_RESUME_MS } from "../../web/client_session.js";
import { GatewayClient } from "../../web/gateway.js";

const cases = JSON.parse(readFileSync(new URL("./fixtures/client_session_cases.json", import.meta.url), "utf8"));
const TURN_ID = "t-fixture0000000000000001";

class FakeSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 3;
  /** @type {FakeSocket[]} */
  static all = [];
  constructor(url) {
    this.url = url;
    this.readyState = FakeSocket.CONNECTING;
    this.sent = [];
    FakeSocket.all.push(this);
  }
  open() {
    this.readyState = FakeSocket.OPEN;
    this.onopen?.({});
  }
  send(data) {
    assert.equal(this.readyState, FakeSocket.OPEN, "send on a socket that is not open");
    this.sent.push(data);
  }
  deliver(data) {
    this.onmessage?.({ data });
  }
  close(code = 1000) {
    this.readyState = FakeSocket.CLOSED;
    this.onclose?.({ code });
  }
}

function setup() {
  FakeSocket.all = [];
  const timers = [];
  const events = [];
  const states = [];
  const session = new ClientSession();
  const client = new GatewayClient({
    url: "ws://127.0.0.1:9/ws",
    token: "a.b.c",
    session,
    onEvent: (e) => events.push(e),
    onState: (s) => states.push(s),
    WebSocketImpl: /** @type {any} */ (FakeSocket),
    setTimer: (fn) => timers.push(fn),
    stallMs: null, // the stall timer has its own tests (fake timers) below
  });
  return { client, session, events, states, timers };
}

test("gateway: the token travels in the query string", () => {
  const { client } = setup();
  client.connect();
  assert.equal(FakeSocket.all[0].url, "ws://127.0.0.1:9/ws?token=a.b.c");
});

test("gateway: a message sent while connecting waits for the open socket", () => {
  const { client, session } = setup();
  client.connect();
  client.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }));
  assert.deepEqual(FakeSocket.all[0].sent, []);
  FakeSocket.all[0].open();
  assert.equal(JSON.parse(FakeSocket.all[0].sent[0]).action, "sendMessage");
});

test("gateway: a dropped connection reconnects and resumes from the last seq held", () => {
  const { client, session, events, states, timers } = setup();
  const inputs = cases[0].steps.map((s) => s.receive);
  client.connect();
  FakeSocket.all[0].open();
  client.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }));
  for (const m of inputs.slice(0, 10)) FakeSocket.all[0].deliver(m);
  client.dropConnection();
  assert.equal(states.at(-1), "reconnecting");
  assert.equal(timers.length, 1);
  timers.shift()();
  const second = FakeSocket.all[1];
  assert.equal(second.url, "ws://127.0.0.1:9/ws?token=a.b.c");
  second.open();
  const held = session.turns.get(TURN_ID).lastSeq;
  assert.ok(held > 0);
  assert.deepEqual(JSON.parse(second.sent[0]), { action: "resume", turn_id: TURN_ID, after_seq: held });
  // The gateway replays from after_seq + 1; overlapping replays are harmless.
  for (const m of inputs.slice(5)) second.deliver(m);
  assert.equal(events.at(-1).type, "turn_ended");
  assert.equal(events.at(-1).outcome, "completed");
  assert.equal(client.drops, 1);
  assert.equal(client.reconnects, 1);
  const text = events.filter((e) => e.type === "text_received").map((e) => e.text).join("");
  assert.equal(text, cases[0].expect.text);
});

test("gateway: a gap on a live connection asks for a resume on the same connection", () => {
  const { client, session } = setup();
  const inputs = cases[0].steps.map((s) => s.receive);
  client.connect();
  FakeSocket.all[0].open();
  client.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }));
  for (const m of inputs.slice(0, 6)) FakeSocket.all[0].deliver(m);
  for (const m of inputs.slice(7, 10)) FakeSocket.all[0].deliver(m);
  const resumes = FakeSocket.all[0].sent.map((s) => JSON.parse(s)).filter((m) => m.action === "resume");
  assert.deepEqual(resumes, [{ action: "resume", turn_id: TURN_ID, after_seq: session.turns.get(TURN_ID).lastSeq }]);
});

test("gateway: no resume after a drop when no turn is running, and none after close()", () => {
  const { client, timers } = setup();
  client.connect();
  FakeSocket.all[0].open();
  client.dropConnection();
  timers.shift()();
  FakeSocket.all[1].open();
  assert.deepEqual(FakeSocket.all[1].sent, []);
  client.close();
  assert.equal(timers.length, 0);
  assert.equal(client.state, "closed");
});

test("gateway: a turn silent for STALL_RESUME_MS on an open socket is resumed on the same connection", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  FakeSocket.all = [];
  const session = new ClientSession();
  const client = new GatewayClient({ url: "ws://127.0.0.1:9/ws", token: "a.b.c", session, onEvent: () => undefined, WebSocketImpl: /** @type {any} */ (FakeSocket) });
  const inputs = cases[0].steps.map((s) => s.receive);
  client.connect();
  const socket = FakeSocket.all[0];
  socket.open();
  client.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }));
  const resumes = () => socket.sent.map((m) => JSON.parse(m)).filter((m) => m.action === "resume");
  t.mock.timers.tick(STALL_RESUME_MS * 3);
  assert.deepEqual(resumes(), [], "not before turn_accepted: the gateway may still be starting the turn");
  for (const m of inputs.slice(0, 6)) socket.deliver(m);
  t.mock.timers.tick(STALL_RESUME_MS - 1);
  socket.deliver(inputs[6]); // a message restarts the silence
  t.mock.timers.tick(STALL_RESUME_MS - 1);
  assert.deepEqual(resumes(), []);
  t.mock.timers.tick(1);
  const held = session.turns.get(TURN_ID).lastSeq;
  assert.deepEqual(resumes(), [{ action: "resume", turn_id: TURN_ID, after_seq: held }]);
  assert.equal(client.stallResumes, 1);
  assert.equal(FakeSocket.all.length, 1, "the same connection");
  for (const m of inputs.slice(7)) socket.deliver(m);
  t.mock.timers.tick(STALL_RESUME_MS * 3);
  assert.equal(resumes().length, 1, "a finished turn is never resumed");
});

test("gateway: no stall resume while the socket is down (the reconnect resumes instead)", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  FakeSocket.all = [];
  const session = new ClientSession();
  const timers = [];
  const client = new GatewayClient({ url: "ws://127.0.0.1:9/ws", token: "a.b.c", session, onEvent: () => undefined, WebSocketImpl: /** @type {any} */ (FakeSocket), setTimer: (fn) => timers.push(fn) });
  client.connect();
  FakeSocket.all[0].open();
  client.send(session.sendMessage({ prompt: "hi", turnId: TURN_ID }));
  for (const m of cases[0].steps.map((s) => s.receive).slice(0, 4)) FakeSocket.all[0].deliver(m);
  client.dropConnection();
  t.mock.timers.tick(STALL_RESUME_MS * 2);
  assert.equal(client.stallResumes, 0);
  assert.equal(timers.length, 1, "only the reconnect is pending");
});
