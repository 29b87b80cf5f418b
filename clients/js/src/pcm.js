// PCM helpers: base64 decoding, reassembly of s16le samples across message boundaries, audibility.
//
// Every wire carries raw PCM s16le, 24 kHz, mono. A transport may cut a chunk at any byte, so PcmAssembler
// keeps an odd trailing byte until its partner arrives and only ever hands out whole samples.

export const SAMPLE_RATE = 24000;
export const SAMPLE_WIDTH_BYTES = 2;

/** The default audibility threshold for time to first audio: -40 dBFS. */
export const AUDIBLE_DBFS = -40;

/**
 * Bytes of a base64 string (standard alphabet, padded), without atob's string round trip.
 * @param {string} text
 * @returns {Uint8Array}
 */
export function base64ToBytes(text) {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * Base64 of bytes (used by tests and by nothing on the hot path).
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function bytesToBase64(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
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
