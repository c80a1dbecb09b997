import { once } from "node:events";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import { connect, createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import test from "ava";
import type { NodeRequest } from "../../src/api/http-body.js";
import type { NodeResponse } from "../../src/api/rest-gateway.js";
import { universalRequest } from "../../src/api/universal-request.js";

/**
 * The Connect handler's view of a request: what it says of the request, and
 * its signal, which aborts (canceled) only when the client goes away before
 * the answer is complete, over HTTP/2 (gRPC) and HTTP/1.1 (Connect).
 */
type Seen = { request: ReturnType<typeof universalRequest>; closed: Promise<unknown> };

function handlerRecording(seen: Seen[], answer: boolean) {
  return (req: NodeRequest, res: NodeResponse) => {
    const request = universalRequest(req, res, new Uint8Array([1, 2, 3]), createContextValues());
    seen.push({ request, closed: once(res, "close") });
    if (answer) res.end("ok");
  };
}

const aborted = (signal: AbortSignal) => (signal.aborted ? Promise.resolve() : once(signal, "abort").then(() => undefined));

test("HTTP/2: the request as the handler reads it; a completed call's signal never aborts", async (t) => {
  const seen: Seen[] = [];
  const server = createHttp2Server(handlerRecording(seen, true) as (req: Http2ServerRequest, res: Http2ServerResponse) => void);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const client = connect(`http://127.0.0.1:${port}`);
  t.teardown(() => {
    client.close();
    server.close();
  });
  const stream = client.request({
    ":method": "POST",
    ":path": "/webhooks.v1.EventService/PublishEvent?x=1",
    "content-type": "application/grpc",
    "x-twice": ["a", "b"],
  });
  stream.end();
  stream.resume();
  await once(stream, "close");
  const [{ request, closed }] = seen as [Seen];
  t.is(request.method, "POST");
  t.is(request.httpVersion, "2.0");
  t.is(request.url, `http://127.0.0.1:${port}/webhooks.v1.EventService/PublishEvent?x=1`);
  t.is(request.header.get("content-type"), "application/grpc");
  t.is(request.header.get("x-twice"), "a, b");
  t.false(
    [...request.header.keys()].some((name) => name.startsWith(":")),
    "no pseudo-headers",
  );
  const chunks: Uint8Array[] = [];
  for await (const chunk of request.body as AsyncIterable<Uint8Array>) chunks.push(chunk);
  t.deepEqual(chunks, [new Uint8Array([1, 2, 3])]);
  await closed;
  t.false(request.signal.aborted);
});

const HTTP2_ENDINGS = [
  "cancels its stream",
  "resets its stream with NO_ERROR",
  "drops its connection",
  "stays silent past the server's idle timeout",
] as const;

for (const how of HTTP2_ENDINGS) {
  test(`HTTP/2: a call whose client ${how} before the answer has its signal aborted as canceled`, async (t) => {
    const seen: Seen[] = [];
    const server = createHttp2Server(handlerRecording(seen, false) as (req: Http2ServerRequest, res: Http2ServerResponse) => void);
    // The listener ends a session idle this long (it uses minutes); every stream on it closes with NO_ERROR.
    if (how === "stays silent past the server's idle timeout") server.setTimeout(200);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const client = connect(`http://127.0.0.1:${port}`);
    client.on("error", () => {});
    t.teardown(() => {
      client.destroy();
      server.close();
    });
    const stream = client.request({ ":method": "POST", ":path": "/webhooks.v1.EventService/WatchDeliveries" });
    stream.on("error", () => {});
    stream.end();
    while (seen.length === 0) await new Promise((resolve) => setImmediate(resolve));
    // RST_STREAM CANCEL, as a gRPC client's cancel().
    if (how === "cancels its stream") stream.close(0x8);
    else if (how === "resets its stream with NO_ERROR") stream.close(0);
    else if (how === "drops its connection") client.destroy();
    const { signal } = (seen[0] as Seen).request;
    await aborted(signal);
    t.true(signal.reason instanceof ConnectError);
    t.is((signal.reason as ConnectError).code, Code.Canceled);
  });
}

test("HTTP/1.1: a client that hangs up before the answer aborts the signal; one answered never does", async (t) => {
  const seen: Seen[] = [];
  let answer = true;
  const server = createHttpServer((req, res) => handlerRecording(seen, answer)(req, res));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  t.teardown(() => server.close());
  const post = () => {
    const req = httpRequest({ port, host: "127.0.0.1", method: "POST", path: "/webhooks.v1.EventService/PublishEvent", agent: false });
    req.on("error", () => {});
    req.end();
    return req;
  };
  const answered = post();
  const [response] = await once(answered, "response");
  response.resume();
  await once(response, "end");
  const first = seen[0] as Seen;
  await first.closed;
  t.is(first.request.url, `http://127.0.0.1:${port}/webhooks.v1.EventService/PublishEvent`);
  t.false(first.request.signal.aborted);

  answer = false;
  const hungUp = post();
  while (seen.length < 2) await new Promise((resolve) => setImmediate(resolve));
  hungUp.destroy();
  const { signal } = (seen[1] as Seen).request;
  await aborted(signal);
  t.is((signal.reason as ConnectError).code, Code.Canceled);
});

test("a call whose client went away while its body was read starts with its signal aborted", async (t) => {
  let arrived: () => void = () => {};
  const handled = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const built = new Promise<ReturnType<typeof universalRequest>>((resolve) => {
    const server = createHttpServer((req, res) => {
      arrived();
      // As the adapter does once the body is read: here, after the client has gone.
      res.once("close", () => setImmediate(() => resolve(universalRequest(req, res, new Uint8Array(), createContextValues()))));
    });
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      const req = httpRequest({ port, host: "127.0.0.1", method: "POST", path: "/webhooks.v1.EventService/PublishEvent", agent: false });
      req.on("error", () => {});
      req.flushHeaders();
      void handled.then(() => req.destroy());
    });
    t.teardown(() => server.close());
  });
  const request = await built;
  t.true(request.signal.aborted);
  t.is((request.signal.reason as ConnectError).code, Code.Canceled);
});
