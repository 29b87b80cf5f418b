// ClientSession (clients/js/src/session.js) over the cases recorded from relay_core's ClientSession
// (fixtures/client_session_cases.json): same events in the same order, same text, PCM, outcome, last seq and
// resume messages. The cases themselves are checked against the agent's own text and PCM in Python.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  ClientSession,
  MAX_PLAYED_MS,
  MAX_PROMPT_CHARS,
  MAX_SEND_BYTES,
  MAX_WORD_INDEX,
  STALL_RESUME_MS,
  TurnPhase,
  applyWords,
  newTurnId,
} from "../../clients/js/src/session.js";
import { MESSAGE_TOO_BIG } from "../../clients/js/src/connection.js";

const cases = JSON.parse(readFileSync(new URL("./fixtures/client_session_cases.json", import.meta.url), "utf8"));

/** Run a case's steps on a fresh session that started the case's turn. */
function run(c) {
  const session = new ClientSession();
  session.sendMessage({ prompt: "hi", turnId: c.turn_id });
  const events = [];
  const resumes = [];
  for (const step of c.steps) {
    if ("receive" in step) events.push(...session.receive(step.receive));
    else resumes.push(session.resume(c.turn_id));
  }
  const turn = session.turns.get(c.turn_id);
  const pcm = events
    .filter((e) => e.type === "audio_received" && e.turnId === c.turn_id)
    .map((e) => Buffer.from(e.samples.buffer, e.samples.byteOffset, e.samples.byteLength));
  const text = events.filter((e) => e.type === "text_received" && e.turnId === c.turn_id).map((e) => e.text);
  return { session, turn, events, resumes, text: text.join(""), pcm_b64: Buffer.concat(pcm).toString("base64") };
}

for (const c of cases) {
  test(`session: ${c.name}`, () => {
    const got = run(c);
    const e = c.expect;
    assert.deepEqual(got.events.map((x) => x.type), e.event_types);
    assert.equal(got.text, e.text);
    assert.equal(got.pcm_b64, e.pcm_b64, "reassembled PCM differs from relay_core's");
    if ("packets_b64" in e) {
      // an Opus turn: the same whole packets, in order, once each, and the same PCM-timeline length
      const packets = got.events.filter((x) => x.type === "opus_received").flatMap((x) => x.packets);
      assert.deepEqual(packets.map((p) => Buffer.from(p).toString("base64")), e.packets_b64);
      assert.equal(got.turn.samples, e.samples);
    }
    assert.equal(got.turn.outcome, e.outcome);
    assert.equal(got.turn.errorCode, e.error_code);
    assert.equal(got.turn.lastSeq, e.last_seq);
    assert.deepEqual(got.turn.words, e.words);
    /** @type {any[]} */
    const words = [];
    for (const x of got.events.filter((x) => x.type === "words_received")) applyWords(words, x.words, x.index);
    assert.deepEqual(words, e.words, "the words_received events, applied by index, give the turn's words");
    assert.deepEqual(got.resumes, c.steps.filter((s) => "resume" in s).map((s) => s.resume));
  });
}

test("session: audio samples are placed where sample_offset says", () => {
  const { events } = run(cases[0]);
  let expected = 0;
  for (const e of events.filter((x) => x.type === "audio_received")) {
    assert.equal(e.sampleOffset, expected);
    expected += e.samples.length;
  }
  assert.ok(expected > 0);
});

test("session: a message after the terminal one is a protocol error, a repeat is a duplicate", () => {
  const c = cases[0];
  const { session } = run(c);
  const last = JSON.parse(c.steps.at(-1).receive);
  const after = JSON.stringify({ ...last, seq: last.seq + 1 });
  assert.deepEqual(session.receive(after).map((e) => e.type), ["protocol_error"]);
  assert.deepEqual(session.receive(c.steps.at(-1).receive).map((e) => e.type), ["duplicate_ignored"]);
  assert.throws(() => session.resume(c.turn_id), /already ended/);
  assert.deepEqual(session.resumeAll(), []);
});

test("session: sendMessage, cancel and resume messages", () => {
  const session = new ClientSession();
  const send = JSON.parse(session.sendMessage({ prompt: "Hello", voice: "jm_kumo", speed: 1.2, mode: "batch" }));
  assert.deepEqual(Object.keys(send).sort(), ["action", "mode", "prompt", "speed", "turn_id", "voice"]);
  assert.equal(send.action, "sendMessage");
  assert.match(send.turn_id, /^t-[A-Za-z0-9_-]{22}$/);
  assert.equal(session.current.phase, TurnPhase.SENT);
  assert.deepEqual(JSON.parse(session.cancel(send.turn_id)), { action: "cancel", turn_id: send.turn_id });
  assert.deepEqual(JSON.parse(session.cancel()), { action: "cancel" });
  assert.deepEqual(session.resumeAll().map((m) => JSON.parse(m)), [{ action: "resume", turn_id: send.turn_id, after_seq: -1 }]);
  assert.throws(() => session.sendMessage({ prompt: "again", turnId: send.turn_id }), /already used/);
});

test("session: malformed messages are reported, never thrown, and change nothing", () => {
  const c = cases[0];
  const session = new ClientSession();
  session.sendMessage({ prompt: "x", turnId: c.turn_id });
  for (const s of c.steps.slice(0, 5)) session.receive(s.receive);
  const before = session.turns.get(c.turn_id).lastSeq;
  const held = session.turns.get(c.turn_id).samples;
  const next = JSON.parse(c.steps[5].receive);
  const bad = [
    "{not json",
    "[1]",
    '{"type":"text_delta","text":"x"}',
    JSON.stringify({ ...next, seq: -1 }),
    JSON.stringify({ type: "audio_chunk", turn_id: c.turn_id, seq: before + 1, chunk: 0, sample_offset: 999999, data: "AAAA" }),
    JSON.stringify({ type: "audio_chunk", turn_id: c.turn_id, seq: before + 1, chunk: 0, sample_offset: held, data: "AA==" }),
  ];
  for (const b of bad) assert.deepEqual(session.receive(b).map((e) => e.type), ["protocol_error"], b);
  assert.equal(session.turns.get(c.turn_id).lastSeq, before);
  assert.notEqual(session.receive(c.steps[5].receive)[0].type, "protocol_error");
});

test("session: turn ids are fresh and valid", () => {
  const ids = new Set(Array.from({ length: 100 }, () => newTurnId()));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, /^t-[A-Za-z0-9_-]{22}$/);
});

const error = (turnId, code) => JSON.stringify({ type: "error", code, message: "m", turn_id: turnId });
const accepted = (turnId) => JSON.stringify({ type: "turn_accepted", turn_id: turnId });

test("session: turn_accepted clears a pending resume, so a later lost-turn error does not expire the turn", () => {
  const session = new ClientSession();
  const turnId = JSON.parse(session.sendMessage({ prompt: "hi" })).turn_id;
  session.receive(accepted(turnId));
  session.resume(turnId);
  assert.equal(session.turns.get(turnId).resumePending, true);
  session.receive(accepted(turnId)); // the relay answers the resume with turn_accepted before its replay
  assert.equal(session.turns.get(turnId).resumePending, false);
  assert.deepEqual(session.receive(error(turnId, "resume_expired")).map((e) => e.type), ["rejected"]);
  assert.equal(session.turns.get(turnId).finished, false);
});

test("session: unknown_turn / resume_expired never reject a turn not yet accepted; other codes do", () => {
  for (const code of ["unknown_turn", "resume_expired"]) {
    const session = new ClientSession();
    const turnId = JSON.parse(session.sendMessage({ prompt: "hi" })).turn_id;
    assert.deepEqual(session.receive(error(turnId, code)).map((e) => e.type), ["rejected"]);
    assert.equal(session.turns.get(turnId).finished, false, code);
    assert.equal(session.turns.get(turnId).phase, TurnPhase.SENT);
  }
  const session = new ClientSession();
  const turnId = JSON.parse(session.sendMessage({ prompt: "hi" })).turn_id;
  assert.deepEqual(session.receive(error(turnId, "rate_limited")).map((e) => e.type), ["rejected", "turn_ended"]);
  assert.equal(session.turns.get(turnId).outcome, "rejected");
});

test("session: timings and played_ms go on the wire only when given, as relay_core reads them", () => {
  const constants = JSON.parse(readFileSync(new URL("./fixtures/constants.json", import.meta.url), "utf8"));
  assert.deepEqual({ STALL_RESUME_MS, MAX_PLAYED_MS, MAX_WORD_INDEX, MAX_PROMPT_CHARS, MAX_SEND_BYTES, MESSAGE_TOO_BIG }, constants);
  const session = new ClientSession();
  assert.equal("timings" in JSON.parse(session.sendMessage({ prompt: "a" })), false);
  const timed = JSON.parse(session.sendMessage({ prompt: "b", timings: true }));
  assert.equal(timed.timings, true);
  assert.deepEqual(JSON.parse(session.cancel(timed.turn_id, 1234.6)), { action: "cancel", turn_id: timed.turn_id, played_ms: 1235 });
  assert.deepEqual(JSON.parse(session.cancel(null, -3)), { action: "cancel", played_ms: 0 });
  assert.throws(() => session.cancel(null, NaN), RangeError);
});

test("session: malformed word timings are a protocol error and change nothing", () => {
  const session = new ClientSession();
  const turnId = "t-words";
  session.sendMessage({ prompt: "hi", turnId, timings: true });
  const bad = [
    { word: "", start_s: 0, end_s: 1 },
    { word: "late", start_s: 2, end_s: 1 },
  ];
  for (const w of bad) {
    const events = session.receive(JSON.stringify({ type: "word_timings", turn_id: turnId, seq: 0, words: [w] }));
    assert.deepEqual(events.map((e) => e.type), ["protocol_error"]);
  }
  const backwards = [{ word: "a", start_s: 1, end_s: 2 }, { word: "b", start_s: 1.5, end_s: 3 }];
  assert.deepEqual(session.receive(JSON.stringify({ type: "word_timings", turn_id: turnId, seq: 0, words: backwards })).map((e) => e.type), ["protocol_error"]);
  assert.equal(session.turns.get(turnId).lastSeq, -1);
  assert.deepEqual(session.turns.get(turnId).words, []);
});

test("session: a word_timings index replaces the estimates held from there on; a malformed index changes nothing", () => {
  const session = new ClientSession();
  const turnId = "t-index";
  session.sendMessage({ prompt: "hi", turnId, timings: true });
  const send = (/** @type {number} */ seq, /** @type {any} */ extra) =>
    session.receive(JSON.stringify({ type: "word_timings", turn_id: turnId, seq, ...extra }));
  send(0, { words: [{ word: "one", start_s: 0, end_s: 0.2 }, { word: "two", start_s: 0.3, end_s: 0.5, final: false }] });
  const [event] = send(1, { index: 1, words: [{ word: "two", start_s: 0.25, end_s: 0.45 }] });
  assert.equal(event.type, "words_received");
  assert.equal(/** @type {any} */ (event).index, 1);
  assert.deepEqual(session.turns.get(turnId).words, [
    { word: "one", start_s: 0, end_s: 0.2 },
    { word: "two", start_s: 0.25, end_s: 0.45 },
  ]);
  for (const index of [-1, 1.5, "1", MAX_WORD_INDEX + 1]) {
    assert.deepEqual(send(2, { index, words: [] }).map((e) => e.type), ["protocol_error"]);
  }
  assert.deepEqual(send(2, { words: [{ word: "x", start_s: 1, end_s: 2, final: "no" }] }).map((e) => e.type), ["protocol_error"]);
  assert.equal(session.turns.get(turnId).words.length, 2);
});

test("session: newConversation() is pending until conversation_started, which touches no turn", () => {
  const session = new ClientSession();
  session.sendMessage({ prompt: "hi", turnId: "t-1" });
  assert.deepEqual(JSON.parse(session.newConversation()), { action: "newConversation" });
  assert.equal(session.conversationPending, true);
  assert.deepEqual(session.receive(JSON.stringify({ type: "conversation_started" })), [{ type: "new_conversation_started" }]);
  assert.equal(session.conversationPending, false);
  assert.equal(session.turns.get("t-1").phase, "sent");
});

test("session: speech_waiting is a status of the live turn, not its end", () => {
  const session = new ClientSession();
  const turnId = "t-waiting000000000000001";
  session.sendMessage({ prompt: "hi", turnId });
  const events = session.receive(JSON.stringify({ type: "speech_waiting", turn_id: turnId, seq: 0, position: 3 }));
  assert.deepEqual(events, [{ type: "speech_waiting_received", turnId, seq: 0, position: 3 }]);
  assert.equal(session.turns.get(turnId).phase, TurnPhase.ACTIVE);
  assert.equal(session.turns.get(turnId).lastSeq, 0);
});
