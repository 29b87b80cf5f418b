// Incremental Server-Sent Events decoder: the browser twin of relay_core.sse.SseDecoder.
//
// A response body arrives in transport chunks that may hold half an event, several events, half a UTF-8
// character or a "\r" whose "\n" is in the next chunk. SseDecoder buffers bytes and yields each complete
// event's data exactly once, whatever the split (WHATWG rules for data/event; comments, id and retry ignored).

const LF = 0x0a;
const CR = 0x0d;
const utf8 = new TextDecoder("utf-8");

/** @typedef {{data: string, event: string}} SseEvent */

export class SseDecoder {
  constructor() {
    /** @type {Uint8Array} */
    this._buffer = new Uint8Array(0);
    /** @type {string[]} */
    this._data = [];
    this._event = "";
  }

  /**
   * Feed one transport chunk; returns the events completed by it, in order.
   * @param {Uint8Array} chunk
   * @returns {SseEvent[]}
   */
  feed(chunk) {
    const joined = new Uint8Array(this._buffer.length + chunk.length);
    joined.set(this._buffer, 0);
    joined.set(chunk, this._buffer.length);
    /** @type {SseEvent[]} */
    const events = [];
    let start = 0;
    for (;;) {
      const taken = takeLine(joined, start);
      if (taken === null) break;
      const [line, next] = taken;
      start = next;
      const event = this._line(line);
      if (event !== null) events.push(event);
    }
    this._buffer = joined.slice(start);
    return events;
  }

  /**
   * End of stream: an event without its final blank line still counts (as in relay_core).
   * @returns {SseEvent[]}
   */
  close() {
    if (this._buffer.length === 0 && this._data.length === 0) return [];
    return this.feed(new Uint8Array([LF, LF]));
  }

  /**
   * @param {Uint8Array} raw one line without its line break
   * @returns {SseEvent | null}
   */
  _line(raw) {
    const line = utf8.decode(raw);
    if (line === "") {
      if (this._data.length === 0) {
        this._event = "";
        return null;
      }
      const event = { data: this._data.join("\n"), event: this._event || "message" };
      this._data = [];
      this._event = "";
      return event;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this._data.push(value);
    else if (name === "event") this._event = value;
    return null;
  }
}

/**
 * The next complete line in buf from start: [line bytes, index after its line break], or null when the
 * line is not complete yet (including a "\r" at the very end, which may be the first half of "\r\n").
 * @param {Uint8Array} buf
 * @param {number} start
 * @returns {[Uint8Array, number] | null}
 */
function takeLine(buf, start) {
  for (let i = start; i < buf.length; i++) {
    const byte = buf[i];
    if (byte === LF) return [buf.subarray(start, i), i + 1];
    if (byte === CR) {
      if (i + 1 >= buf.length) return null;
      return [buf.subarray(start, i), buf[i + 1] === LF ? i + 2 : i + 1];
    }
  }
  return null;
}
