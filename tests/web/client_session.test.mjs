// ClientSession (web/client_session.js) against message sequences framed by relay_core's TurnFramer
// (fixtures/client_session_cases.json): the same truth the Python client session is checked against.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ClientSession, newTurnId } from "../../web/client_session.js";

const cases = JSON.parse(readFileSync(new URL("./fixtures/client_session_cases.json", import.meta.url), "utf8"));
const TURN_ID = "t-fixture0000000000000001";

/** Run a case: every input through one session; what the page would hold afterwards. */
function run(inputs) {
  const session = new ClientSession();
  session.startTurn({ prompt: "hi", turnId: TURN_ID });
  const events = inputs.flatMap((m) => session.receive(m));
  const pcm = events
    .filter((e) => e.type === "audio")
    .map((e) => Buffer.from(e.samples.buffer, e.samples.byteOffset, e.samples.byteLength));
  const terminal = events.find((e) => e.type === "turn_end" || e.type === "turn_error");
  return {
    session,
    events,
    text: events.filter((e) => e.type === "text").map((e) => e.text).join(""),
    pcm_b64: Buffer.concat(pcm).toString("base64"),
    status: terminal === undefined ? null : terminal.type === "turn_error" ? "error" : terminal.status,
    error_code: terminal?.type === "turn_error" ? terminal.code : undefined,
  };
}

for (const c of cases) {
  test(`session: ${c.name}`, () => {
    const got = run(c.inputs);
    const e = c.expect;
    if ("text" in e) assert.equal(got.text, e.text);
    if ("pcm_b64" in e) assert.equal(got.pcm_b64, e.pcm_b64, "reassembled PCM differs from the agent's");
    assert.equal(got.status, e.status);
    if ("error_code" in e) assert.equal(got.error_code, e.error_code);
    assert.equal(got.session.lastSeq, e.last_seq);
    assert.equal(got.session.resumeMessage(), e.resume);
    if ("gaps" in e) assert.equal(got.session.gaps, e.gaps);
    if ("duplicates" in e) assert.equal(got.session.duplicates, e.duplicates);
    assert.deepEqual(got.events.filter((x) => x.type === "protocol_error"), []);
  });
}

test("session: a gap is reported once, with the resume that fills it", () => {
  const c = cases.find((x) => x.gap_resume !== undefined);
  const session = new ClientSession();
  session.startTurn({ prompt: "hi", turnId: TURN_ID });
  const gaps = [];
  let resumeAtGap = null;
  for (const m of c.inputs) {
    for (const e of session.receive(m)) {
      if (e.type === "gap") {
        gaps.push(e);
        resumeAtGap = session.resumeMessage();
      }
    }
  }
  assert.equal(gaps.length, 1);
  assert.equal(resumeAtGap, c.gap_resume);
});

test("session: audio samples are placed where sample_offset says", () => {
  const { events } = run(cases[0].inputs);
  let expected = 0;
  for (const e of events.filter((x) => x.type === "audio")) {
    assert.equal(e.sampleOffset, expected);
    expected += e.samples.length;
  }
  assert.ok(expected > 0);
});

test("session: messages after the terminal one are ignored", () => {
  const c = cases[0];
  const session = new ClientSession();
  session.startTurn({ prompt: "hi", turnId: TURN_ID });
  for (const m of c.inputs) session.receive(m);
  assert.deepEqual(session.receive(c.inputs[3]), []);
  assert.equal(session.cancelMessage(), null);
});

test("session: sendMessage, cancel and resume messages", () => {
  const session = new ClientSession();
  const send = JSON.parse(session.startTurn({ prompt: "Hello", voice: "jm_kumo", speed: 1.2, mode: "batch" }));
  assert.deepEqual(Object.keys(send).sort(), ["action", "mode", "prompt", "speed", "turn_id", "voice"]);
  assert.equal(send.action, "sendMessage");
  assert.match(send.turn_id, /^t-[A-Za-z0-9_-]{22}$/);
  assert.deepEqual(JSON.parse(session.cancelMessage()), { action: "cancel", turn_id: send.turn_id });
  assert.deepEqual(JSON.parse(session.resumeMessage()), { action: "resume", turn_id: send.turn_id, after_seq: -1 });
});

test("session: bad JSON and unnumbered turn messages are reported, not thrown", () => {
  const session = new ClientSession();
  session.startTurn({ prompt: "x" });
  assert.equal(session.receive("{not json")[0].type, "protocol_error");
  assert.equal(session.receive("[1]")[0].type, "protocol_error");
  assert.equal(session.receive('{"type":"text_delta","text":"x"}')[0].type, "protocol_error");
  assert.equal(session.turnActive, true);
});

test("session: a rejection of a later message leaves the running turn alone", () => {
  const c = cases[0];
  const session = new ClientSession();
  session.startTurn({ prompt: "hi", turnId: TURN_ID });
  for (const m of c.inputs.slice(0, 4)) session.receive(m);
  const events = session.receive(JSON.stringify({ type: "error", code: "turn_in_progress", message: "one at a time" }));
  assert.deepEqual(events.map((e) => e.type), ["rejected"]);
  assert.equal(session.turnActive, true);
});

test("session: turn ids are fresh and valid", () => {
  const ids = new Set(Array.from({ length: 100 }, () => newTurnId()));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, /^t-[A-Za-z0-9_-]{22}$/);
});
