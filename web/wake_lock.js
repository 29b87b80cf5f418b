// Keep the screen on while a reply plays (Screen Wake Lock API). A lock is released by the browser when the page is
// hidden; while one is wanted it is taken again when the page is shown. Where the API is missing or refused, the
// page works the same, only the screen may dim.

export class ScreenWakeLock {
  constructor() {
    /** @type {"off" | "held" | "unsupported" | "refused"} */
    this.state = "off";
    this.wanted = false;
    this.requests = 0;
    /** @type {{release: () => Promise<void>} | null} */
    this._sentinel = null;
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && this.wanted && this._sentinel === null) void this._request();
    });
  }

  /** Want the screen on (a reply is playing). */
  hold() {
    this.wanted = true;
    if (this._sentinel === null) void this._request();
  }

  /** The reply is over: let the screen sleep again. */
  release() {
    this.wanted = false;
    const sentinel = this._sentinel;
    this._sentinel = null;
    if (sentinel !== null) void sentinel.release().catch(() => undefined);
    if (this.state === "held") this.state = "off";
  }

  async _request() {
    const api = /** @type {any} */ (navigator).wakeLock;
    if (!api || typeof api.request !== "function") {
      this.state = "unsupported";
      return;
    }
    this.requests += 1;
    try {
      const sentinel = await api.request("screen");
      if (!this.wanted) {
        void sentinel.release();
        return;
      }
      this._sentinel = sentinel;
      this.state = "held";
      sentinel.addEventListener?.("release", () => {
        if (this._sentinel === sentinel) this._sentinel = null;
      });
    } catch {
      this.state = "refused"; // e.g. the page is hidden, or a battery saver says no
    }
  }
}
