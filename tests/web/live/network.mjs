// A TCP relay between the client and the gateway that a test can break the way a phone's network breaks: cut()
// destroys every connection at once (no close frame: the client sees an abnormal close, as when a phone switches
// from Wi-Fi to cellular), down() also refuses new connections until up() (the app in the background, a tunnel).
import net from "node:net";

export class FlakyNetwork {
  /** @param {number} targetPort the gateway's port on 127.0.0.1 */
  constructor(targetPort) {
    this.targetPort = targetPort;
    /** @type {Set<net.Socket>} */
    this.sockets = new Set();
    this.isDown = false;
    this.cuts = 0;
    this.server = net.createServer((client) => {
      if (this.isDown) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.targetPort, "127.0.0.1");
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  /** Listen on a free port of 127.0.0.1; resolves to it. */
  listen() {
    return new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => resolve(/** @type {net.AddressInfo} */ (this.server.address()).port)));
  }

  /** Every open connection dies now. */
  cut() {
    this.cuts += 1;
    for (const s of this.sockets) s.destroy();
  }

  /** Cut, and refuse new connections until up(). */
  down() {
    this.isDown = true;
    this.cut();
  }

  up() {
    this.isDown = false;
  }

  close() {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve(undefined)));
  }
}
