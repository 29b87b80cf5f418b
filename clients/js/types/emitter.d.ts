/**
 * Listeners by event name. A listener that throws does not stop the others; the error surfaces as
 * an unhandled promise rejection, so the platform still reports it.
 * @template {Record<string, any>} Events
 */
export class Emitter<Events extends Record<string, any>> {
    /** @type {Map<keyof Events, Set<(payload: any) => void>>} */
    _listeners: Map<keyof Events, Set<(payload: any) => void>>;
    /**
     * Call `listener` on every `type` event; returns the function that removes it.
     * @template {keyof Events} K
     * @param {K} type
     * @param {(payload: Events[K]) => void} listener
     * @returns {() => void}
     */
    on<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void): () => void;
    /**
     * @template {keyof Events} K
     * @param {K} type
     * @param {Events[K]} payload
     */
    emit<K extends keyof Events>(type: K, payload: Events[K]): void;
}
