// Opus on the client wire (docs/client-protocol.md, "Audio formats"): splitting a chunk into its packets, decoding a
// turn's packets with one decoder, and trimming the decoded stream to the PCM timeline, so that a sink gets exactly
// the samples [sample_offset, sample_offset + samples) of every chunk, as with PCM.
//
// Decoders, chosen at run time (chooseOpusDecoder): one the app injects (React Native: the `opus-decoder` package it
// bundles), the platform's WebCodecs AudioDecoder (browsers), else the `opus-decoder` WebAssembly package when it is
// installed (Node: an optional dependency of this package), else none: the client then asks for PCM.

/** relay_core.limits.OPUS_FORMAT: audio_stream_start.format of an Opus stream (raw packets, no Ogg). */
export const OPUS_FORMAT = "opus";
/** relay_core.limits.PCM_FORMAT */
export const PCM_FORMAT = "pcm_s16le";
/** What a client may ask for in sendMessage's `audio` (relay_core's client-facing names). */
export const AUDIO_CHOICES = Object.freeze(["pcm", "opus"]);
/** The npm package of the WebAssembly decoder used where the platform has none (MIT, wasm-audio-decoders). */
export const WASM_DECODER_PACKAGE = "opus-decoder";

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
  constructor(message) {
    super(message);
    this.name = "OpusWireError";
  }
}

/**
 * The packets of an audio_chunk: `bytes` cut at `packetBytes` (their sum must be the length of `bytes`).
 * @param {Uint8Array} bytes
 * @param {unknown} packetBytes
 * @returns {Uint8Array[]}
 */
export function splitPackets(bytes, packetBytes) {
  if (!Array.isArray(packetBytes) || packetBytes.length === 0) throw new OpusWireError("an Opus audio_chunk needs a non-empty packet_bytes list");
  /** @type {Uint8Array[]} */
  const packets = [];
  let at = 0;
  for (const size of packetBytes) {
    if (!Number.isInteger(size) || size <= 0) throw new OpusWireError(`packet_bytes holds ${JSON.stringify(size)}: each is a positive byte count`);
    packets.push(bytes.subarray(at, at + size));
    at += size;
  }
  if (at !== bytes.length) throw new OpusWireError(`packet_bytes add up to ${at} but data has ${bytes.length} bytes`);
  return packets;
}

/**
 * Float samples in [-1, 1] as s16 (rounded, clipped).
 * @param {Float32Array} floats
 * @returns {Int16Array}
 */
export function floatToInt16(floats) {
  const out = new Int16Array(floats.length);
  for (let i = 0; i < floats.length; i++) {
    const v = Math.round(floats[i] * 32767);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
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
  constructor({ factory, preSkip, sampleRate = 24000, channels = 1 }) {
    if (!Number.isInteger(preSkip) || preSkip < 0) throw new OpusWireError(`pre_skip ${JSON.stringify(preSkip)} is not a sample count`);
    this.preSkip = preSkip;
    /** Samples decoded so far (decoded-stream coordinates, pre_skip included). */
    this.decoded = 0;
    /** @type {Promise<OpusDecoderLike>} */
    this._decoder = factory({ sampleRate, channels });
    this._closed = false;
  }

  /**
   * The PCM of one chunk: exactly `samples` samples starting at `sampleOffset` on the PCM timeline (zeros where the
   * decoder gave fewer than the wire promised, so the timeline stays exact).
   * @param {{packets: Uint8Array[], sampleOffset: number, samples: number}} chunk
   * @returns {Promise<Int16Array>}
   */
  async decodeChunk({ packets, sampleOffset, samples }) {
    const decoder = await this._decoder;
    const floats = await decoder.decode(packets);
    const start = this.decoded; // decoded-stream index of floats[0]
    this.decoded += floats.length;
    const from = sampleOffset + this.preSkip - start;
    const out = new Int16Array(samples);
    const lo = Math.max(0, from);
    const hi = Math.min(floats.length, from + samples);
    if (hi > lo) out.set(floatToInt16(floats.subarray(lo, hi)), lo - from);
    return out;
  }

  /** Free the decoder (the turn's audio ended or the turn did). */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._decoder.then((d) => d.close()).catch(() => undefined);
  }
}

/**
 * WebCodecs' AudioDecoder (browsers), or null where the platform has none or it cannot decode 24 kHz mono Opus.
 * @returns {Promise<OpusDecoderFactory | null>}
 */
export async function webCodecsOpusFactory() {
  const AudioDecoderImpl = /** @type {any} */ (globalThis).AudioDecoder;
  const EncodedAudioChunkImpl = /** @type {any} */ (globalThis).EncodedAudioChunk;
  if (typeof AudioDecoderImpl !== "function" || typeof EncodedAudioChunkImpl !== "function") return null;
  const config = { codec: "opus", sampleRate: 24000, numberOfChannels: 1 };
  try {
    const { supported } = await AudioDecoderImpl.isConfigSupported(config);
    if (!supported) return null;
  } catch {
    return null;
  }
  return async ({ sampleRate, channels }) => {
    /** @type {Float32Array[]} */
    let outputs = [];
    /** @type {Error | null} */
    let failure = null;
    // Chromium decodes Opus at its native 48 kHz whatever the configured rate. Every other sample of it is what
    // libopus gives at 24 kHz (bit for bit on tests/web/fixtures/opus_tone.json: the codec band-limits its output),
    // so the stream is decimated by the whole factor, its phase kept across outputs.
    let phase = 0;
    // flush() would end the stream (Chromium resets the decoder: the next packet starts from silence), so a decode
    // waits instead for one output per packet given, as WebCodecs' Opus decoders produce.
    let given = 0;
    let produced = 0;
    /** @type {(() => void) | null} */
    let wake = null;
    const decoder = new AudioDecoderImpl({
      output: (/** @type {any} */ data) => {
        const frames = data.numberOfFrames;
        const plane = new Float32Array(frames);
        data.copyTo(plane, { planeIndex: 0, format: "f32-planar" });
        const factor = Math.round(data.sampleRate / sampleRate);
        data.close();
        produced += 1;
        if (produced >= given) wake?.();
        if (factor <= 1) {
          outputs.push(plane);
          return;
        }
        const kept = new Float32Array(Math.ceil((frames - phase) / factor));
        let at = 0;
        for (let i = phase; i < frames; i += factor) kept[at++] = plane[i];
        phase = (phase + at * factor) - frames;
        outputs.push(kept.subarray(0, at));
      },
      error: (/** @type {Error} */ error) => {
        failure = error;
        wake?.();
      },
    });
    decoder.configure({ codec: "opus", sampleRate, numberOfChannels: channels });
    let timestampUs = 0;
    return {
      name: "webcodecs",
      async decode(packets) {
        /** @type {Promise<void>} */
        const done = new Promise((resolve) => (wake = resolve));
        for (const packet of packets) {
          given += 1;
          decoder.decode(new EncodedAudioChunkImpl({ type: "key", timestamp: timestampUs, data: packet }));
          timestampUs += 20_000;
        }
        if (produced < given && failure === null) await done;
        wake = null;
        if (failure) throw failure;
        const got = concat(outputs);
        outputs = [];
        return got;
      },
      close() {
        if (decoder.state !== "closed") decoder.close();
      },
    };
  };
}

/**
 * The `opus-decoder` WebAssembly package (Node; React Native apps inject it instead, since Metro bundles no dynamic
 * import), or null when it is not installed or does not start.
 * @param {string} [packageName]  the package to import (tests name a missing one)
 * @returns {Promise<OpusDecoderFactory | null>}
 */
export async function wasmOpusFactory(packageName = WASM_DECODER_PACKAGE) {
  /** @type {any} */
  let module;
  try {
    module = await import(packageName); // a variable: bundlers and tsc leave the optional import alone
  } catch {
    return null;
  }
  const factory = wasmFactoryFrom(module.OpusDecoder);
  try {
    (await factory({ sampleRate: 24000, channels: 1 })).close(); // it instantiates here (WebAssembly available?)
  } catch {
    return null;
  }
  return factory;
}

/**
 * An OpusDecoderFactory from the `opus-decoder` package's OpusDecoder class (what a React Native app passes as
 * connect({opusDecoder: wasmFactoryFrom(OpusDecoder)})).
 * @param {any} OpusDecoderClass
 * @returns {OpusDecoderFactory}
 */
export function wasmFactoryFrom(OpusDecoderClass) {
  if (typeof OpusDecoderClass !== "function") throw new TypeError("wasmFactoryFrom(OpusDecoder) needs the opus-decoder package's OpusDecoder class");
  return async ({ sampleRate, channels }) => {
    const decoder = new OpusDecoderClass({ sampleRate, channels, preSkip: 0 });
    await decoder.ready;
    return {
      name: "wasm",
      async decode(packets) {
        /** @type {Float32Array[]} */
        const outputs = [];
        for (const packet of packets) {
          const { channelData, samplesDecoded, errors } = decoder.decodeFrame(packet);
          if (errors?.length) throw new OpusWireError(`an Opus packet did not decode: ${errors[0].message ?? errors[0]}`);
          outputs.push(channelData[0].subarray(0, samplesDecoded));
        }
        return concat(outputs);
      },
      close() {
        decoder.free();
      },
    };
  };
}

/**
 * The decoder to use on this platform: the injected one, else WebCodecs, else the WebAssembly package; null (with
 * why) when none works (the client then asks for PCM).
 * @param {OpusDecoderFactory | null | undefined} injected
 * @param {string} [packageName]  the WebAssembly decoder's package (default WASM_DECODER_PACKAGE)
 * @returns {Promise<{factory: OpusDecoderFactory, name: string} | {factory: null, name: null, reason: string}>}
 */
export async function chooseOpusDecoder(injected, packageName = WASM_DECODER_PACKAGE) {
  if (injected) return { factory: injected, name: "injected" };
  const webCodecs = await webCodecsOpusFactory();
  if (webCodecs) return { factory: webCodecs, name: "webcodecs" };
  const wasm = await wasmOpusFactory(packageName);
  if (wasm) return { factory: wasm, name: "wasm" };
  return {
    factory: null,
    name: null,
    reason: `no Opus decoder here (no WebCodecs AudioDecoder for opus, and the ${packageName} package is not installed): asking for PCM`,
  };
}

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
export async function chooseAudio(audio, injected) {
  const found = await chooseOpusDecoder(injected);
  if (found.factory === null) return { choice: { format: "pcm", decoder: null, reason: found.reason }, factory: null };
  const reason = audio === "pcm" ? "PCM asked for (connect({audio}))" : null;
  return { choice: { format: audio, decoder: found.name, reason }, factory: found.factory };
}

/**
 * Bytes that `bytes` raw bytes take in base64 (how an audio_chunk carries them).
 * @param {number} bytes
 */
export function base64Length(bytes) {
  return 4 * Math.ceil(bytes / 3);
}

/**
 * @param {Float32Array[]} parts
 * @returns {Float32Array}
 */
function concat(parts) {
  if (parts.length === 1) return parts[0];
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Float32Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
