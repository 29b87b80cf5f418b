// A small typed event emitter (no DOM EventTarget, which React Native lacks).

/**
 * Listeners by event name. A listener that throws does not stop the others; the error surfaces as
 * an unhandled promise rejection, so the platform still reports it.
 * @template {Record<string, any>} Events
 */
export class Emitter {
  constructor() {
    /** @type {Map<keyof Events, Set<(payload: any) => void>>} */
    this._listeners = new Map();
  }

  /**
   * Call `listener` on every `type` event; returns the function that removes it.
   * @template {keyof Events} K
   * @param {K} type
   * @param {(payload: Events[K]) => void} listener
   * @returns {() => void}
   */
  on(type, listener) {
    let set = this._listeners.get(type);
    if (set === undefined) this._listeners.set(type, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * @template {keyof Events} K
   * @param {K} type
   * @param {Events[K]} payload
   */
  emit(type, payload) {
    for (const listener of [...(this._listeners.get(type) ?? [])]) {
      try {
        listener(payload);
      } catch (err) {
        void Promise.reject(err); // an unhandled rejection: reported by the platform, the other listeners still run
      }
    }
  }
}
