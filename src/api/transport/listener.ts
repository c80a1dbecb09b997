import { createServer as createHttpServer, type Server as HttpServer, type ServerResponse } from "node:http";
import { createServer as createHttp2Server, type Http2Server, type ServerHttp2Session } from "node:http2";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";
import type { NodeRequest, NodeResponse } from "./http-body.js";

const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n");
const SNIFF_TIMEOUT_MS = 10_000;

/**
 * How long a client may stall. HTTP/1.1: a request that trickles in or stops
 * short is cut with 408 (slowloris). HTTP/2: a connection silent this long is
 * closed with GOAWAY (a client reconnects when it next has a call).
 */
export interface RequestLimits {
  /** Its headers, from its first byte. */
  headersTimeoutMs: number;
  /** Its headers and body. */
  requestTimeoutMs: number;
  /** How often connections are checked against those. */
  checkEveryMs: number;
  /** An HTTP/2 connection with no frame either way (watch streams send one every 15 s). */
  idleSessionMs: number;
}

/** Node's own defaults for http.Server; HTTP/2 has none of its own. */
export const REQUEST_LIMITS: RequestLimits = {
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 300_000,
  checkEveryMs: 30_000,
  idleSessionMs: 120_000,
};

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

/** Ends an HTTP/1.1 connection with no request under way: what it has written is sent first. */
function endIdle(socket: Socket): void {
  if (!socket.writableEnded) socket.end(() => socket.destroy());
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
  limits: RequestLimits = REQUEST_LIMITS,
): Promise<Listener> {
  const http1: HttpServer = createHttpServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.checkEveryMs,
    },
    handler,
  );
  // Each HTTP/1.1 connection's answers under way (http.Server tracks its connections only when it
  // listens itself, which this one does not): close() ends each connection once it falls idle.
  const http1Answering = new Map<Socket, Set<ServerResponse>>();
  let closing = false;
  http1.on("request", (req, res) => {
    const answering = http1Answering.get(req.socket);
    if (!answering) return;
    answering.add(res);
    res.once("close", () => {
      answering.delete(res);
      if (closing && answering.size === 0 && http1Answering.has(req.socket)) endIdle(req.socket);
    });
  });
  const http2: Http2Server = createHttp2Server(handler);
  http2.setTimeout(limits.idleSessionMs);
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
      http1Answering.set(socket, new Set());
      socket.once("close", () => http1Answering.delete(socket));
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
  // http.Server enforces headersTimeout and requestTimeout only once it hears 'listening', which
  // this one, handed its connections, never emits itself: without it a request could trickle in
  // forever (test/api/transport/listener.test.ts fails if that changes). close() stops its checks.
  http1.emit("listening");

  return {
    port: (server.address() as AddressInfo).port,
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      closing = true;
      http1.close(() => {});
      for (const session of sessions) session.close();
      const deadline = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      // Keep-alive connections end once idle: those idle now at once; those answering when their
      // last answer is sent, told so in its header if not sent yet; those whose next request arrives
      // in the grace period, told in its header (set ahead of the handler, which may answer at once,
      // as health does: a header set after it is sent throws). Connections that have not yet said
      // which protocol they speak are left to their first request, or to the deadline.
      for (const [socket, answering] of http1Answering) {
        if (answering.size === 0) endIdle(socket);
        for (const res of answering) if (!res.headersSent) res.setHeader("connection", "close");
      }
      http1.prependListener("request", (_req, res) => res.setHeader("connection", "close"));
      await closed;
      clearTimeout(deadline);
    },
  };
}
