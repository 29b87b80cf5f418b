/**
 * The packets of an audio_chunk: `bytes` cut at `packetBytes` (their sum must be the length of `bytes`).
 * @param {Uint8Array} bytes
 * @param {unknown} packetBytes
 * @returns {Uint8Array[]}
 */
export function splitPackets(bytes: Uint8Array, packetBytes: unknown): Uint8Array[];
/**
 * Float samples in [-1, 1] as s16 (rounded, clipped).
 * @param {Float32Array} floats
 * @returns {Int16Array}
 */
export function floatToInt16(floats: Float32Array): Int16Array;
/**
 * WebCodecs' AudioDecoder (browsers), or null where the platform has none or it cannot decode 24 kHz mono Opus.
 * @returns {Promise<OpusDecoderFactory | null>}
 */
export function webCodecsOpusFactory(): Promise<OpusDecoderFactory | null>;
/**
 * The `opus-decoder` WebAssembly package (Node; React Native apps inject it instead, since Metro bundles no dynamic
 * import), or null when it is not installed or does not start.
 * @param {string} [packageName]  the package to import (tests name a missing one)
 * @returns {Promise<OpusDecoderFactory | null>}
 */
export function wasmOpusFactory(packageName?: string): Promise<OpusDecoderFactory | null>;
/**
 * An OpusDecoderFactory from the `opus-decoder` package's OpusDecoder class (what a React Native app passes as
 * connect({opusDecoder: wasmFactoryFrom(OpusDecoder)})).
 * @param {any} OpusDecoderClass
 * @returns {OpusDecoderFactory}
 */
export function wasmFactoryFrom(OpusDecoderClass: any): OpusDecoderFactory;
/**
 * The decoder to use on this platform: the injected one, else WebCodecs, else the WebAssembly package; null (with
 * why) when none works (the client then asks for PCM).
 * @param {OpusDecoderFactory | null | undefined} injected
 * @param {string} [packageName]  the WebAssembly decoder's package (default WASM_DECODER_PACKAGE)
 * @returns {Promise<{factory: OpusDecoderFactory, name: string} | {factory: null, name: null, reason: string}>}
 */
export function chooseOpusDecoder(injected: OpusDecoderFactory | null | undefined, packageName?: string): Promise<{
    factory: OpusDecoderFactory;
    name: string;
} | {
    factory: null;
    name: null;
    reason: string;
}>;
/**
 * What a client asks for, once its Opus decoder is chosen.
 * @typedef {{format: "pcm" | "opus", decoder: string | null, reason: string | null}} AudioChoice
 */
/**
 * The audio format a client's turns ask for: Opus with the decoder found (chooseOpusDecoder) when `audio` is "opus",
 * else PCM and why. The factory is returned whenever a decoder works (a turn may still ask for Opus by itself).
 * @param {"pcm" | "opus"} audio
 * @param {OpusDecoderFactory | null | undefined} injected
 * @returns {Promise<{choice: AudioChoice, factory: OpusDecoderFactory | null}>}
 */
export function chooseAudio(audio: "pcm" | "opus", injected: OpusDecoderFactory | null | undefined): Promise<{
    choice: AudioChoice;
    factory: OpusDecoderFactory | null;
}>;
/**
 * Bytes that `bytes` raw bytes take in base64 (how an audio_chunk carries them).
 * @param {number} bytes
 */
export function base64Length(bytes: number): number;
/** relay_core.limits.OPUS_FORMAT: audio_stream_start.format of an Opus stream (raw packets, no Ogg). */
export const OPUS_FORMAT: "opus";
/** relay_core.limits.PCM_FORMAT */
export const PCM_FORMAT: "pcm_s16le";
/** What a client may ask for in sendMessage's `audio` (relay_core's client-facing names). */
export const AUDIO_CHOICES: readonly string[];
/** The npm package of the WebAssembly decoder used where the platform has none (MIT, wasm-audio-decoders). */
export const WASM_DECODER_PACKAGE: "opus-decoder";
/**
 * A decoder of one Opus stream (24 kHz mono): `decode` takes the next packets in order and resolves with all the
 * samples they decode to, as floats in [-1, 1]; `close` frees it.
 * @typedef {{name: string, decode: (packets: Uint8Array[]) => Promise<Float32Array>, close: () => void}} OpusDecoderLike
 */
/**
 * Makes a fresh decoder (one per turn).
 * @typedef {(options: {sampleRate: number, channels: number}) => Promise<OpusDecoderLike>} OpusDecoderFactory
 */
/** The wire said something impossible about an Opus chunk. */
export class OpusWireError extends Error {
    /** @param {string} message */
    constructor(message: string);
}
/**
 * One turn's Opus stream on the client: decodes its chunks in order with one decoder (kept across a resume: the
 * replay fills the gap in seq order) and returns each chunk's PCM on the PCM timeline (the decoded stream without its
 * first `preSkip` samples, nothing past total_samples). Chunks must be given in order, one at a time (await each).
 */
export class OpusStream {
    /**
     * @param {{factory: OpusDecoderFactory, preSkip: number, sampleRate?: number, channels?: number}} options
     */
    constructor({ factory, preSkip, sampleRate, channels }: {
        factory: OpusDecoderFactory;
        preSkip: number;
        sampleRate?: number;
        channels?: number;
    });
    preSkip: number;
    /** Samples decoded so far (decoded-stream coordinates, pre_skip included). */
    decoded: number;
    /** @type {Promise<OpusDecoderLike>} */
    _decoder: Promise<OpusDecoderLike>;
    _closed: boolean;
    /**
     * The PCM of one chunk: exactly `samples` samples starting at `sampleOffset` on the PCM timeline (zeros where the
     * decoder gave fewer than the wire promised, so the timeline stays exact).
     * @param {{packets: Uint8Array[], sampleOffset: number, samples: number}} chunk
     * @returns {Promise<Int16Array>}
     */
    decodeChunk({ packets, sampleOffset, samples }: {
        packets: Uint8Array[];
        sampleOffset: number;
        samples: number;
    }): Promise<Int16Array>;
    /** Free the decoder (the turn's audio ended or the turn did). */
    close(): void;
}
/**
 * What a client asks for, once its Opus decoder is chosen.
 */
export type AudioChoice = {
    format: "pcm" | "opus";
    decoder: string | null;
    reason: string | null;
};
/**
 * A decoder of one Opus stream (24 kHz mono): `decode` takes the next packets in order and resolves with all the
 * samples they decode to, as floats in [-1, 1]; `close` frees it.
 */
export type OpusDecoderLike = {
    name: string;
    decode: (packets: Uint8Array[]) => Promise<Float32Array>;
    close: () => void;
};
/**
 * Makes a fresh decoder (one per turn).
 */
export type OpusDecoderFactory = (options: {
    sampleRate: number;
    channels: number;
}) => Promise<OpusDecoderLike>;
