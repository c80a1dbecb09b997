import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createHttp2Server, type Http2Server, type ServerHttp2Session } from "node:http2";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";
import type { NodeRequest } from "./http-body.js";
import type { NodeResponse } from "./rest-gateway.js";

const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n");
const SNIFF_TIMEOUT_MS = 10_000;

/** The port is taken by another process. */
export class PortInUseError extends Error {
  constructor(readonly port: number) {
    super(`PORT ${port} is already in use`);
  }
}

/** The address the request came from, as the TCP connection says (never a header). */
export function remoteAddress(req: NodeRequest): string | undefined {
  return req.socket.remoteAddress;
}

export interface Listener {
  port: number;
  /** Stops accepting, lets open requests finish for `graceMs`, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

/**
 * One cleartext port for HTTP/1.1 and HTTP/2 (h2c prior knowledge, which
 * gRPC uses). `http2.createServer({allowHTTP1})` only negotiates over TLS,
 * so each connection is routed by its first bytes instead.
 */
export async function listen(
  port: number,
  host: string,
  handler: (req: NodeRequest, res: NodeResponse) => void,
  onError: (error: Error) => void,
): Promise<Listener> {
  const http1: HttpServer = createHttpServer(handler);
  const http2: Http2Server = createHttp2Server(handler);
  const sockets = new Set<Socket>();
  const sessions = new Set<ServerHttp2Session>();
  http2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  const server = createNetServer((socket) => {
    sockets.add(socket);
    // Read now, while the peer is surely connected: net.Socket keeps the answer, so a request read after a reset still knows it.
    void socket.remoteAddress;
    // A connection that never says which protocol it speaks is not kept around.
    socket.setTimeout(SNIFF_TIMEOUT_MS, () => socket.destroy());
    socket.once("close", () => sockets.delete(socket));
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      const compared = Math.min(seen.length, HTTP2_PREFACE.length);
      const isHttp2 = seen.subarray(0, compared).equals(HTTP2_PREFACE.subarray(0, compared));
      if (isHttp2 && compared < HTTP2_PREFACE.length) return; // need more bytes to decide
      socket.off("data", onData);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(seen);
      if (isHttp2) {
        // The session reads the native socket itself; it takes the unshifted bytes first (Node emulates receiving what the socket buffered).
        http2.emit("connection", socket);
        return;
      }
      http1.emit("connection", socket);
      socket.resume();
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => reject(error.code === "EADDRINUSE" ? new PortInUseError(port) : error));
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // A failed accept (EMFILE…) must not take the process down.
  server.on("error", onError);

  return {
    port: (server.address() as AddressInfo).port,
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      http1.closeIdleConnections();
      for (const session of sessions) session.close();
      const deadline = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      // Keep-alive connections that finish their request close themselves. Ahead of the handler,
      // which may answer at once (health, 404, 503): a header set after it is sent throws.
      http1.prependListener("request", (_req, res) => res.setHeader("connection", "close"));
      await closed;
      clearTimeout(deadline);
    },
  };
}
