// Stand-ins for the platform the client library runs on: a scripted WebSocket and manual timers.
import assert from "node:assert/strict";

export class FakeSocket {
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
  /** A refused handshake (e.g. HTTP 401): browsers report only a close before open. */
  refuse() {
    this.readyState = FakeSocket.CLOSED;
    this.onerror?.({});
    this.onclose?.({ code: 1006 });
  }
  send(data) {
    assert.equal(this.readyState, FakeSocket.OPEN, "send on a socket that is not open");
    this.sent.push(data);
  }
  deliver(data) {
    this.onmessage?.({ data });
  }
  close(code = 1000) {
    if (this.readyState === FakeSocket.CLOSED) return;
    this.readyState = FakeSocket.CLOSED;
    this.onclose?.({ code });
  }
  sentJson() {
    return this.sent.map((m) => JSON.parse(m));
  }
}

/** Timers run by hand: `pending()` lists {ms}, `runNext()` runs the earliest, `advance(ms)` runs what is due. */
export class ManualTimers {
  constructor() {
    this.now = 0;
    this._next = 1;
    /** @type {Map<number, {fn: () => void, at: number, ms: number}>} */
    this.timers = new Map();
    this.setTimeout = (/** @type {() => void} */ fn, /** @type {number} */ ms) => {
      const id = this._next++;
      this.timers.set(id, { fn, at: this.now + ms, ms });
      return id;
    };
    this.clearTimeout = (/** @type {number} */ id) => this.timers.delete(id);
  }
  pending() {
    return [...this.timers.values()].map((t) => t.ms);
  }
  advance(ms) {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) break;
      this.timers.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
    }
    this.now = until;
  }
}

/** Let pending promise callbacks (an awaited getToken) run. */
export const flush = () => new Promise((resolve) => setImmediate(resolve));
