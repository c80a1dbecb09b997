import { once } from "node:events";
import type { ServerResponse } from "node:http";
import { connect as connectHttp2 } from "node:http2";
import { connect, type Socket } from "node:net";
import test from "ava";
import { listen, REQUEST_LIMITS } from "../../../src/api/transport/listener.js";

/** Reads from `socket` until `done` says the text so far is complete (leaving the socket open). */
function readUntil(socket: Socket, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (!done(text)) return;
      socket.off("data", onData);
      socket.off("error", reject);
      resolve(text);
    };
    socket.on("data", onData);
    socket.on("error", reject);
  });
}

/** A gate the test opens: `reached` resolves once `count` handlers are waiting at it. */
function gate(count: number) {
  let open: () => void = () => {};
  let arrived = 0;
  let reachedAll: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const reached = new Promise<void>((resolve) => {
    reachedAll = resolve;
  });
  return {
    open,
    reached,
    wait(): Promise<void> {
      arrived += 1;
      if (arrived === count) reachedAll();
      return opened;
    },
  };
}

async function connected(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  return socket;
}

test("closing: a request arriving on a keep-alive connection in the grace period is answered, told to close, and nothing throws", async (t) => {
  const slow = gate(1);
  const listener = await listen(
    0,
    "127.0.0.1",
    (req, res) => {
      // /slow is under way when closing starts; /fast answers in the handler itself, as health does.
      if (req.url === "/slow") void slow.wait().then(() => res.writeHead(200, { "content-length": "4" }).end("slow"));
      else res.writeHead(200, { "content-length": "4" }).end("fast");
    },
    (error) => t.fail(error.message),
  );
  const first = await connected(listener.port);
  const second = await connected(listener.port);
  first.write("GET /slow HTTP/1.1\r\nhost: x\r\n\r\n");
  await slow.reached;
  const closed = listener.close(5_000);
  // The second connection's first request comes after closing started.
  second.write("GET /fast HTTP/1.1\r\nhost: x\r\n\r\n");
  const fast = await readUntil(second, (text) => text.endsWith("fast"));
  t.regex(fast, /^HTTP\/1\.1 200/);
  t.regex(fast, /\r\nconnection: close\r\n/i);
  slow.open();
  const answer = await readUntil(first, (text) => text.endsWith("slow"));
  t.regex(answer, /^HTTP\/1\.1 200/);
  t.regex(answer, /\r\nconnection: close\r\n/i, "under way when closing started, and told to close");
  await Promise.all([once(first, "close"), once(second, "close")]);
  await closed;
});

test("closing: keep-alive connections end as they fall idle: at once, or with the answer under way, whether or not its header was sent", async (t) => {
  // Node's keep-alive timeout (5 s) would end them too, later: these must end before it.
  const keepAliveMs = 5_000;
  const held = gate(2);
  const listener = await listen(
    0,
    "127.0.0.1",
    (req, res) => {
      if (req.url === "/idle") return void res.writeHead(200, { "content-length": "4" }).end("idle");
      // /streamed has sent its header (keep-alive) before closing starts; /held has not.
      if (req.url === "/streamed") (res as ServerResponse).writeHead(200, { "content-length": "4" }).write("st");
      void held.wait().then(() => (req.url === "/streamed" ? res.end("rm") : res.writeHead(200, { "content-length": "4" }).end("held")));
    },
    (error) => t.fail(error.message),
  );
  const ask = async (path: string, end: string) => {
    const socket = await connected(listener.port);
    const answer = readUntil(socket, (text) => text.endsWith(end));
    socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`);
    return { socket, answer, ended: once(socket, "end") };
  };
  const idle = await ask("/idle", "idle");
  t.regex(await idle.answer, /\r\nconnection: keep-alive\r\n/i);
  const [held1, streamed] = await Promise.all([ask("/held", "held"), ask("/streamed", "strm")]);
  await held.reached;
  const started = Date.now();
  const closed = listener.close(600_000);
  await idle.ended;
  held.open();
  t.regex(await held1.answer, /\r\nconnection: close\r\n/i, "told in its answer's header");
  t.regex(await streamed.answer, /\r\nconnection: keep-alive\r\n[\s\S]*strm$/i, "its header sent before closing");
  await Promise.all([held1.ended, streamed.ended]);
  await closed;
  t.true(Date.now() - started < keepAliveMs, "ended by closing, not by the keep-alive timeout");
});

test("a request whose headers or body trickle in is cut with 408 once its time is up (slowloris)", async (t) => {
  t.timeout(20_000);
  const listener = await listen(
    0,
    "127.0.0.1",
    (req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-length": "2" }).end("ok"));
    },
    (error) => t.fail(error.message),
    { ...REQUEST_LIMITS, headersTimeoutMs: 500, requestTimeoutMs: 1_000, checkEveryMs: 100 },
  );
  t.teardown(() => listener.close(0));
  t.true(REQUEST_LIMITS.headersTimeoutMs > 0 && REQUEST_LIMITS.requestTimeoutMs > 0, "the service's own limits are set");
  const headers = await connected(listener.port);
  headers.write("GET / HTTP/1.1\r\nhost: x\r\n");
  const body = await connected(listener.port);
  body.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nab");
  const complete = await connected(listener.port);
  complete.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nab");
  for (const [socket, what] of [
    [headers, "headers never finished"],
    [body, "a body that stops short"],
  ] as const) {
    const answer = await readUntil(socket, (text) => text.includes("\r\n\r\n"));
    t.regex(answer, /^HTTP\/1\.1 408 /, what);
    await once(socket, "close");
  }
  t.regex(await readUntil(complete, (text) => text.endsWith("ok")), /^HTTP\/1\.1 200 /, "a request that arrived whole is answered");
  complete.destroy();
});

test("an HTTP/2 connection left silent is closed with GOAWAY once its time is up", async (t) => {
  t.timeout(20_000);
  const listener = await listen(
    0,
    "127.0.0.1",
    (_req, res) => res.end("ok"),
    (error) => t.fail(error.message),
    { ...REQUEST_LIMITS, idleSessionMs: 300 },
  );
  t.teardown(() => listener.close(0));
  const session = connectHttp2(`http://127.0.0.1:${listener.port}`);
  session.on("error", () => {});
  const [goaway] = await Promise.all([once(session, "goaway"), once(session, "close")]);
  t.is(goaway[0], 0, "NO_ERROR: a graceful close the client reconnects after");
});
