/**
 * Bytes of a base64 string (standard alphabet, padding optional). Throws a RangeError on any other character
 * or an impossible length, so corrupt data never turns into noise.
 * @param {string} text
 * @returns {Uint8Array}
 */
export function base64ToBytes(text: string): Uint8Array;
/**
 * Base64 of bytes, padded (used by tests and by nothing on the hot path).
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function bytesToBase64(bytes: Uint8Array): string;
/**
 * Samples in `byteLength` bytes of s16le PCM, or -1 when that is not a whole number of samples.
 * @param {number} byteLength
 */
export function pcmSampleCount(byteLength: number): number;
/**
 * Amplitude (as a fraction of full scale) of a dBFS level.
 * @param {number} dbfs
 */
export function dbfsToAmplitude(dbfs: number): number;
/**
 * Index of the first sample whose magnitude is above the threshold, or -1.
 * @param {Int16Array} samples
 * @param {number} [thresholdDbfs]
 */
export function firstAudibleIndex(samples: Int16Array, thresholdDbfs?: number): number;
/**
 * FNV-1a 32-bit digest of samples (as their s16le bytes): a short fingerprint a test compares with the
 * same digest computed in Python over the PCM the server sent.
 * @param {Int16Array} samples
 * @param {number} [seed] the digest so far (to continue across buffers)
 */
export function fnv1a(samples: Int16Array, seed?: number): number;
export const SAMPLE_RATE: 24000;
export const SAMPLE_WIDTH_BYTES: 2;
/** The default audibility threshold for time to first audio: -40 dBFS. */
export const AUDIBLE_DBFS: -40;
/** Reassembles little-endian 16-bit samples from byte chunks cut anywhere. */
export class PcmAssembler {
    /** @type {number | null} a low byte waiting for its high byte */
    _pending: number | null;
    totalSamples: number;
    /** Whether a half sample is held back (a stream that ends like this was cut mid-sample). */
    get hasPartialSample(): boolean;
    /**
     * The whole samples completed by this chunk.
     * @param {Uint8Array} bytes
     * @returns {Int16Array}
     */
    push(bytes: Uint8Array): Int16Array;
    /** Forget a held-back half sample (a new stream begins). */
    reset(): void;
}
/**
 * One stream's audio timeline (relay_core.audio_piece.AudioPiece): the pieces of s16le PCM in order, each given
 * as whole samples with the index of its first sample in the stream (`sampleOffset`: every sample before it).
 * The one place where the client library and the web page turn bytes into a sample timeline.
 */
export class PcmTimeline {
    _assembler: PcmAssembler;
    /** Samples placed so far: where the next piece starts. */
    get samples(): number;
    /**
     * The next bytes of the stream (cut anywhere) as the whole samples they complete and where those start.
     * @param {Uint8Array} bytes
     * @returns {{sampleOffset: number, samples: Int16Array}}
     */
    append(bytes: Uint8Array): {
        sampleOffset: number;
        samples: Int16Array;
    };
    /** Forget a held-back half sample (a new stream begins); the timeline goes on. */
    reset(): void;
}
