/**
 * A fresh turn id like relay_core.client.messages.new_turn_id: "t-" + 22 URL-safe characters. Uses
 * crypto.getRandomValues where the platform has it (browsers, Node, React Native with a polyfill), Math.random
 * otherwise: a turn id must be unique among the user's turns, not secret.
 */
export function newTurnId(): string;
/**
 * The opus_received event of an Opus audio_chunk (the gateway's, or the agent's own on its SSE stream: the same
 * fields) whose `data` decoded to `bytes`: its packets and where its PCM goes. Its sample_offset must be
 * `expectedOffset` (the PCM-timeline samples of the turn's Opus chunks before it); a protocol_error otherwise.
 * @param {string} turnId
 * @param {any} msg
 * @param {Uint8Array} bytes
 * @param {number} expectedOffset
 * @returns {ClientEvent}
 */
export function opusChunkEvent(turnId: string, msg: any, bytes: Uint8Array, expectedOffset: number): ClientEvent;
/**
 * A cancel's `played_ms`: a whole number of ms within 0..MAX_PLAYED_MS (relay_core.word_timings.parse_played_ms).
 * @param {number} playedMs
 */
export function playedMsField(playedMs: number): number;
/**
 * The `words` of a word_timings message, or null if any entry is malformed (relay_core.word_timings checks).
 * @param {unknown} value
 * @returns {WordTiming[] | null}
 */
export function parseWords(value: unknown): WordTiming[] | null;
/**
 * The `index` of a word_timings message: null when absent (the words are appended), a whole number from 0 to
 * relay_core.word_timings.MAX_WORD_INDEX, or undefined when malformed.
 * @param {unknown} value
 * @returns {number | null | undefined}
 */
export function parseWordIndex(value: unknown): number | null | undefined;
/**
 * Apply one word_timings message to the words held (relay_core.word_timings.apply_word_timings): from `index` on
 * they are replaced by `words` (estimates made final, or better estimates); with `index` null they are appended.
 * @param {WordTiming[]} held
 * @param {WordTiming[]} words
 * @param {number | null} index
 */
export function applyWords(held: WordTiming[], words: WordTiming[], index: number | null): void;
/**
 * The UTF-8 size of a string in bytes, as the gateway counts it (a lone surrogate, which JSON.stringify escapes,
 * counts as the 3 bytes of U+FFFD).
 * @param {string} text
 */
export function utf8Length(text: string): number;
/**
 * @typedef {{type: "accepted", turnId: string}
 *   | {type: "turn_started", turnId: string, mode: string, model: string}
 *   | {type: "text_received", turnId: string, seq: number, text: string}
 *   | {type: "audio_started", turnId: string, voice: string, format: string, sampleRate: number, channels: number,
 *      preSkip: number, frameSamples: number}
 *   | {type: "audio_received", turnId: string, seq: number, sampleOffset: number, samples: Int16Array}
 *   | {type: "opus_received", turnId: string, seq: number, sampleOffset: number, sampleCount: number, packets: Uint8Array[]}
 *   | {type: "words_received", turnId: string, seq: number, words: WordTiming[], index: number | null}
 *   | {type: "audio_ended", turnId: string, totalSamples: number, durationS: number}
 *   | {type: "speech_waiting_received", turnId: string, seq: number, position: number}
 *   | {type: "turn_ended", turnId: string, outcome: string, code: string | null, message: string | null}
 *   | {type: "rejected", code: string, message: string, turnId: string | null}
 *   | {type: "gap_detected", turnId: string, expectedSeq: number, receivedSeq: number}
 *   | {type: "duplicate_ignored", turnId: string, seq: number}
 *   | {type: "new_conversation_started"}
 *   | {type: "protocol_error", message: string}} ClientEvent
 */
/** @typedef {Extract<ClientEvent, {type: "opus_received"}>} OpusReceived */
/**
 * One written word and the span of its speech, in seconds on the turn's audio timeline
 * (relay_core.word_timings.WordTiming). `final: false`: an estimate from the model's durations, sent so that the
 * word is timed before its audio plays; a later `word_timings` message replaces it (see `applyWords`).
 * @typedef {{word: string, start_s: number, end_s: number, final?: boolean}} WordTiming
 */
/**
 * relay_core.client.session.STALL_RESUME_S in ms: a client that hears nothing for this long about an accepted,
 * unfinished turn, on a socket still open, sends that turn's `resume` on the same connection
 * (tests/web/fixtures/constants.json, written from relay_core, keeps the two equal).
 */
export const STALL_RESUME_MS: 10000;
/** relay_core.word_timings.MAX_WORD_INDEX: the largest `index` a word_timings message may carry. */
export const MAX_WORD_INDEX: 10000000;
/** relay_core.word_timings.MAX_PLAYED_MS: the largest `played_ms` a cancel may carry (a day). */
export const MAX_PLAYED_MS: number;
/** relay_core.limits.MAX_PROMPT_CHARS: the most characters (code points) a prompt may have. */
export const MAX_PROMPT_CHARS: 20000;
/**
 * relay_core.limits.APIGW_FRAME_BYTES: the most UTF-8 bytes of one message to the gateway. API Gateway closes the
 * connection (1009) on a frame over 32 KB, and WebSockets (browsers, Node, React Native) send a message as one frame.
 */
export const MAX_SEND_BYTES: number;
/**
 * A message over the protocol's limits (relay_core.errors.LimitExceededError): a prompt over MAX_PROMPT_CHARS or
 * a sendMessage over the session's maxSendBytes. `code` is the protocol's error code, "limit_exceeded".
 */
export class LimitExceededError extends RangeError {
    /** relay_core.client.messages.ClientErrorCode.LIMIT_EXCEEDED */
    static CODE: string;
    /** @param {string} message what is over which limit, and what to do */
    constructor(message: string);
    code: string;
}
/** relay_core.client.session.TurnPhase */
export const TurnPhase: Readonly<{
    SENT: "sent";
    ACTIVE: "active";
    ENDED: "ended";
}>;
/** relay_core.client.session.TurnOutcome */
export const TurnOutcome: Readonly<{
    COMPLETED: "completed";
    CANCELLED: "cancelled";
    FAILED: "failed";
    REJECTED: "rejected";
    EXPIRED: "expired";
}>;
/** What the client holds of one turn (relay_core.client.session.ClientTurn). */
export class ClientTurn {
    /** @param {string} turnId */
    constructor(turnId: string);
    turnId: string;
    /** @type {string} one of TurnPhase */
    phase: string;
    /** The last seq applied; every message up to it was applied exactly once (-1: none yet). */
    lastSeq: number;
    /** @type {string | null} */
    outcome: string | null;
    /** @type {string | null} */
    errorCode: string | null;
    sampleRate: number;
    /** @type {string} audio_stream_start's format: "pcm_s16le" or "opus" */
    format: string;
    /** PCM-timeline samples of the Opus chunks applied so far */
    _opusSamples: number;
    gapReported: boolean;
    resumePending: boolean;
    gaps: number;
    duplicates: number;
    /** @type {WordTiming[]} every word timing applied so far (only when the turn asked for timings) */
    words: WordTiming[];
    _audio: PcmTimeline;
    /** Samples of audio applied so far (on the PCM timeline, whatever the format). */
    get samples(): number;
    get finished(): boolean;
}
export class ClientSession {
    /**
     * `maxSendBytes`: the largest message sendMessage() builds (default MAX_SEND_BYTES, one gateway frame); raise
     * it only with a WebSocket that fragments messages into frames of at most 32 KB (relay_core's max_send_bytes).
     * @param {{maxSendBytes?: number}} [options]
     */
    constructor({ maxSendBytes }?: {
        maxSendBytes?: number;
    });
    maxSendBytes: number;
    /** @type {Map<string, ClientTurn>} every turn, oldest first */
    turns: Map<string, ClientTurn>;
    /** @type {string | null} the turn this page started last */
    currentTurnId: string | null;
    /**
     * A `newConversation` went out and its `conversation_started` has not come back: hold the next sendMessage
     * until it does (it could otherwise reach the old conversation); after a reconnect, send newConversation()
     * again (a second one is harmless). relay_core's ClientSession.conversation_pending.
     */
    conversationPending: boolean;
    /** The turn this page started last, or null. */
    get current(): ClientTurn | null;
    /** The unfinished turns (resume these after a reconnect). */
    get unfinishedTurns(): ClientTurn[];
    /**
     * The `sendMessage` for a new turn. The client picks the turn id so the turn can be resumed even if the
     * connection drops before `turn_accepted`. Throws for a turn id already used in this session.
     * `timings: true` asks for the reply's word timings (`words_received` events); absent or false changes nothing.
     * `lang`: the language to read the reply in, a code or a voice letter (see languages.js; sent as its code);
     * absent, null or "": the voice's own. `audio`: "pcm" (the default, nothing on the wire) or "opus" (the speech
     * comes as Opus packets: opus_received events; decode them with an OpusStream). Throws a TypeError for a language Kokoro does not speak, and a
     * LimitExceededError for a prompt over MAX_PROMPT_CHARS or a message over `maxSendBytes`, recording nothing.
     * @param {{prompt: string, voice?: string | null, speed?: number, lang?: string | null, mode?: string,
     *          turnId?: string, timings?: boolean, audio?: string | null}} turn
     * @returns {string}
     */
    sendMessage(turn: {
        prompt: string;
        voice?: string | null;
        speed?: number;
        lang?: string | null;
        mode?: string;
        turnId?: string;
        timings?: boolean;
        audio?: string | null;
    }): string;
    /**
     * End a turn whose sendMessage the gateway closed the connection over (close code 1009, message too big): the
     * gateway never ran it, so it is not resumed or sent again. The turn_ended event (outcome rejected, code
     * limit_exceeded), or nothing for a turn that is unknown or already ended.
     * @param {string} turnId
     * @param {number} sizeBytes the sendMessage's size in UTF-8 bytes
     * @returns {ClientEvent[]}
     */
    closedTooBig(turnId: string, sizeBytes: number): ClientEvent[];
    /**
     * The `cancel` to send (turnId null: the user's running turn). The turn ends when its terminal message
     * (agent_end with status cancelled) arrives. `playedMs`: how many ms of the turn's audio the listener heard
     * (the agent then remembers only the words heard); null: not said.
     * @param {string | null} [turnId]
     * @param {number | null} [playedMs]
     */
    cancel(turnId?: string | null, playedMs?: number | null): string;
    /**
     * The `newConversation` to send: the user's next turns start a conversation the agent has no history of.
     * Send the next sendMessage once the `new_conversation_started` event came (`conversationPending` is false again).
     * @returns {string}
     */
    newConversation(): string;
    /**
     * The `resume` for an unfinished turn: everything after its last applied seq. Throws for a finished or
     * unknown turn.
     * @param {string} turnId
     */
    resume(turnId: string): string;
    /** A `resume` for every unfinished turn: send them on a new connection after a reconnect. */
    resumeAll(): string[];
    /**
     * Apply one gateway message; the events it causes, in order.
     * @param {string} data
     * @returns {ClientEvent[]}
     */
    receive(data: string): ClientEvent[];
    /** @param {string} turnId */
    _turnFor(turnId: string): ClientTurn;
    /**
     * @param {any} msg an error without seq
     * @returns {ClientEvent[]}
     */
    _onRejected(msg: any): ClientEvent[];
    /**
     * @param {any} msg a turn message (has turn_id and seq)
     * @returns {ClientEvent[]}
     */
    _onTurnMessage(msg: any): ClientEvent[];
    /**
     * The event for the next message of a turn; a protocol_error (and no change) if it is inconsistent.
     * @param {ClientTurn} turn
     * @param {any} msg
     * @returns {ClientEvent}
     */
    _apply(turn: ClientTurn, msg: any): ClientEvent;
    /**
     * @param {ClientTurn} turn
     * @param {any} msg
     * @returns {ClientEvent}
     */
    _applyAudio(turn: ClientTurn, msg: any): ClientEvent;
    /**
     * An Opus chunk: its packets and where its PCM goes (decoding is the client's: it is asynchronous on most
     * platforms). Its sample_offset must continue the PCM timeline; `samples` is what it adds to it.
     * @param {ClientTurn} turn
     * @param {any} msg
     * @param {Uint8Array} bytes
     * @returns {ClientEvent}
     */
    _applyOpus(turn: ClientTurn, msg: any, bytes: Uint8Array): ClientEvent;
}
export type ClientEvent = {
    type: "accepted";
    turnId: string;
} | {
    type: "turn_started";
    turnId: string;
    mode: string;
    model: string;
} | {
    type: "text_received";
    turnId: string;
    seq: number;
    text: string;
} | {
    type: "audio_started";
    turnId: string;
    voice: string;
    format: string;
    sampleRate: number;
    channels: number;
    preSkip: number;
    frameSamples: number;
} | {
    type: "audio_received";
    turnId: string;
    seq: number;
    sampleOffset: number;
    samples: Int16Array;
} | {
    type: "opus_received";
    turnId: string;
    seq: number;
    sampleOffset: number;
    sampleCount: number;
    packets: Uint8Array[];
} | {
    type: "words_received";
    turnId: string;
    seq: number;
    words: WordTiming[];
    index: number | null;
} | {
    type: "audio_ended";
    turnId: string;
    totalSamples: number;
    durationS: number;
} | {
    type: "speech_waiting_received";
    turnId: string;
    seq: number;
    position: number;
} | {
    type: "turn_ended";
    turnId: string;
    outcome: string;
    code: string | null;
    message: string | null;
} | {
    type: "rejected";
    code: string;
    message: string;
    turnId: string | null;
} | {
    type: "gap_detected";
    turnId: string;
    expectedSeq: number;
    receivedSeq: number;
} | {
    type: "duplicate_ignored";
    turnId: string;
    seq: number;
} | {
    type: "new_conversation_started";
} | {
    type: "protocol_error";
    message: string;
};
export type OpusReceived = Extract<ClientEvent, {
    type: "opus_received";
}>;
/**
 * One written word and the span of its speech, in seconds on the turn's audio timeline
 * (relay_core.word_timings.WordTiming). `final: false`: an estimate from the model's durations, sent so that the
 * word is timed before its audio plays; a later `word_timings` message replaces it (see `applyWords`).
 */
export type WordTiming = {
    word: string;
    start_s: number;
    end_s: number;
    final?: boolean;
};
import { PcmTimeline } from "./pcm.js";
