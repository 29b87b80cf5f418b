// Replays recorded turns through @kokoro-relay/client's WebAudioSink on a simulated clock (bench_opus_link.py js):
// the arrival schedules a real client saw through a link-limiting proxy, each session's turns one after another on
// ONE sink (so the first turn has nothing measured and the later ones have), as a page plays them. Prints JSON: per
// session, per turn, the sink's stalls, seconds stalled, start-up wait and seconds of speech.
//
// Input (argv[2], JSON): {sessions: [{name, downlinkBps, turns: [{events: [{t, kind: "text", chars} |
// {t, kind: "audio", samples, wireBytes, opus} | {t, kind: "end"}]}]}]}, t in seconds from the turn's sendMessage.
import { readFileSync } from "node:fs";

import { WebAudioSink } from "../clients/js/src/web_audio_sink.js";

const GAP_S = 2; // between a turn's last sound and the next turn's sendMessage

/** A stand-in AudioContext whose clock is the simulation's. */
class ReplayContext {
  constructor() {
    this.currentTime = 0;
    this.state = "running";
    this.destination = {};
  }
  createBuffer(_channels, frames) {
    const data = new Float32Array(frames);
    return { getChannelData: () => data };
  }
  createBufferSource() {
    return { buffer: null, onended: null, connect() {}, disconnect() {}, start() {}, stop() {} };
  }
}

/** @param {{name: string, downlinkBps: number | null, turns: any[]}} session */
function replay(session) {
  const clock = { now: 0 };
  /** @type {{fn: () => void, at: number}[]} */
  const timers = [];
  const context = new ReplayContext();
  const sink = new WebAudioSink({
    createContext: () => /** @type {any} */ (context),
    clock: () => clock.now,
    downlinkBps: () => session.downlinkBps,
    timers: {
      setTimeout: (fn, ms) => {
        const timer = { fn, at: clock.now + ms / 1000 };
        timers.push(timer);
        return timer;
      },
      clearTimeout: (timer) => timers.splice(timers.indexOf(timer), 1),
    },
  });
  const advance = (t) => {
    for (;;) {
      const due = timers.filter((x) => x.at <= t).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      clock.now = Math.max(clock.now, due.at);
      context.currentTime = clock.now;
      timers.splice(timers.indexOf(due), 1);
      due.fn();
    }
    clock.now = Math.max(clock.now, t);
    context.currentTime = clock.now;
  };
  const out = [];
  let start = 0;
  for (const turn of session.turns) {
    const stalled = [];
    const links = [];
    const offStall = sink.on("stall", (e) => stalled.push(e.durationS));
    const offLink = sink.on("link", (e) => links.push(e));
    sink.begin("t");
    let offset = 0;
    let firstAudioAt = null;
    for (const event of turn.events) {
      advance(start + event.t);
      if (event.kind === "text") sink.text("x".repeat(event.chars));
      else if (event.kind === "end") sink.end();
      else {
        firstAudioAt ??= clock.now;
        if (event.opus) sink.arrived(event.samples, event.wireBytes);
        sink.write(new Int16Array(event.samples), offset, event.wireBytes);
        offset += event.samples;
      }
    }
    sink.end();
    advance(Math.max(clock.now, sink.endTime) + 0.001);
    offStall();
    offLink();
    out.push({
      speechS: offset / sink.sampleRate,
      stalls: sink.stalls,
      stalledS: stalled.reduce((a, b) => a + b, 0),
      startupS: links[0]?.startupS ?? null,
      firstSoundS: sink.scheduled[0] === undefined || firstAudioAt === null ? null : sink.scheduled[0].at - firstAudioAt,
    });
    start = clock.now + GAP_S;
  }
  return { name: session.name, turns: out };
}

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
console.log(JSON.stringify(input.sessions.map(replay)));
