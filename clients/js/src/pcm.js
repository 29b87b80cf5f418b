// PCM helpers: base64 decoding, reassembly of s16le samples across message boundaries, audibility.
//
// Every wire carries raw PCM s16le, 24 kHz, mono. A transport may cut a chunk at any byte, so PcmAssembler
// keeps an odd trailing byte until its partner arrives and only ever hands out whole samples.
// Plain ECMAScript only (no atob/btoa, no DOM): the same code runs in browsers, React Native (Hermes) and Node.

export const SAMPLE_RATE = 24000;
export const SAMPLE_WIDTH_BYTES = 2;

/** The default audibility threshold for time to first audio: -40 dBFS. */
export const AUDIBLE_DBFS = -40;

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

/**
 * Bytes of a base64 string (standard alphabet, padding optional). Throws a RangeError on any other character
 * or an impossible length, so corrupt data never turns into noise.
 * @param {string} text
 * @returns {Uint8Array}
 */
export function base64ToBytes(text) {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 61) end--; // "="
  if (end % 4 === 1 || text.length - end > 2) throw new RangeError("not base64: impossible length or padding");
  const out = new Uint8Array((end * 3) >> 2);
  let acc = 0;
  let bits = 0;
  let at = 0;
  for (let i = 0; i < end; i++) {
    const code = text.charCodeAt(i);
    const value = code < 128 ? DECODE[code] : -1;
    if (value < 0) throw new RangeError(`not base64: character ${JSON.stringify(text[i])} at ${i}`);
    acc = (acc << 6) | value;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

/**
 * Base64 of bytes, padded (used by tests and by nothing on the hot path).
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function bytesToBase64(bytes) {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += ALPHABET[(n >> 18) & 63] + ALPHABET[(n >> 12) & 63];
    out += i + 1 < bytes.length ? ALPHABET[(n >> 6) & 63] : "=";
    out += i + 2 < bytes.length ? ALPHABET[n & 63] : "=";
  }
  return out;
}

/** Reassembles little-endian 16-bit samples from byte chunks cut anywhere. */
export class PcmAssembler {
  constructor() {
    /** @type {number | null} a low byte waiting for its high byte */
    this._pending = null;
    this.totalSamples = 0;
  }

  /** Whether a half sample is held back (a stream that ends like this was cut mid-sample). */
  get hasPartialSample() {
    return this._pending !== null;
  }

  /**
   * The whole samples completed by this chunk.
   * @param {Uint8Array} bytes
   * @returns {Int16Array}
   */
  push(bytes) {
    const carry = this._pending === null ? 0 : 1;
    const total = carry + bytes.length;
    const count = total >> 1;
    const out = new Int16Array(count);
    let src = 0;
    for (let i = 0; i < count; i++) {
      const lo = i === 0 && carry ? /** @type {number} */ (this._pending) : bytes[src++];
      const hi = bytes[src++];
      out[i] = lo | (hi << 8); // Int16Array wraps: the sign comes out right
    }
    if (total % 2 === 0) this._pending = null;
    else if (bytes.length > 0) this._pending = bytes[bytes.length - 1];
    // else: an empty chunk; the held byte stays held
    this.totalSamples += count;
    return out;
  }

  /** Forget a held-back half sample (a new stream begins). */
  reset() {
    this._pending = null;
  }
}

/**
 * Samples in `byteLength` bytes of s16le PCM, or -1 when that is not a whole number of samples.
 * @param {number} byteLength
 */
export function pcmSampleCount(byteLength) {
  return byteLength % SAMPLE_WIDTH_BYTES === 0 ? byteLength / SAMPLE_WIDTH_BYTES : -1;
}

/**
 * One stream's audio timeline (relay_core.audio_piece.AudioPiece): the pieces of s16le PCM in order, each given
 * as whole samples with the index of its first sample in the stream (`sampleOffset`: every sample before it).
 * The one place where the client library and the web page turn bytes into a sample timeline.
 */
export class PcmTimeline {
  constructor() {
    this._assembler = new PcmAssembler();
  }

  /** Samples placed so far: where the next piece starts. */
  get samples() {
    return this._assembler.totalSamples;
  }

  /**
   * The next bytes of the stream (cut anywhere) as the whole samples they complete and where those start.
   * @param {Uint8Array} bytes
   * @returns {{sampleOffset: number, samples: Int16Array}}
   */
  append(bytes) {
    const sampleOffset = this._assembler.totalSamples;
    return { sampleOffset, samples: this._assembler.push(bytes) };
  }

  /** Forget a held-back half sample (a new stream begins); the timeline goes on. */
  reset() {
    this._assembler.reset();
  }
}

/**
 * Amplitude (as a fraction of full scale) of a dBFS level.
 * @param {number} dbfs
 */
export function dbfsToAmplitude(dbfs) {
  return 10 ** (dbfs / 20);
}

/**
 * Index of the first sample whose magnitude is above the threshold, or -1.
 * @param {Int16Array} samples
 * @param {number} [thresholdDbfs]
 */
export function firstAudibleIndex(samples, thresholdDbfs = AUDIBLE_DBFS) {
  const limit = dbfsToAmplitude(thresholdDbfs) * 32768;
  for (let i = 0; i < samples.length; i++) {
    if (Math.abs(samples[i]) > limit) return i;
  }
  return -1;
}

/**
 * FNV-1a 32-bit digest of samples (as their s16le bytes): a short fingerprint a test compares with the
 * same digest computed in Python over the PCM the server sent.
 * @param {Int16Array} samples
 * @param {number} [seed] the digest so far (to continue across buffers)
 */
export function fnv1a(samples, seed = 0x811c9dc5) {
  let h = seed >>> 0;
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i] & 0xffff;
    h = Math.imul(h ^ (v & 0xff), 0x01000193) >>> 0;
    h = Math.imul(h ^ (v >> 8), 0x01000193) >>> 0;
  }
  return h;
}
