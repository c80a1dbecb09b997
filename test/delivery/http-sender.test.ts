import test from "ava";
import { HttpSender, parseRetryAfter } from "../../src/delivery/http-sender.js";
import { Receiver } from "../helpers/receiver.js";

const options = { timeoutMs: 500, maxResponseBytes: 64, allowPrivateTargets: false, userAgent: "test" };
const signal = new AbortController().signal;

test("with private targets refused, no request leaves for loopback, by IP or by a name resolving to it", async (t) => {
  const receiver = await Receiver.start();
  const sender = new HttpSender(options);
  t.teardown(async () => {
    await sender.close();
    await receiver.close();
  });
  const port = new URL(receiver.url).port;
  for (const url of [
    `http://127.0.0.1:${port}/x`,
    `http://localhost:${port}/x`,
    `http://[::ffff:127.0.0.1]:${port}/x`,
    `http://2130706433:${port}/x`,
  ]) {
    const result = await sender.send({ url, body: "{}", headers: {}, signal });
    t.is(result.statusCode, undefined, url);
    t.regex(result.error ?? "", /refused: .*non-public/, url);
  }
  t.is(receiver.requests.length, 0, "nothing reached the receiver");
});

test("redirects are not followed; huge answers are cut; slow answers time out; refused connections are reported", async (t) => {
  const receiver = await Receiver.start(({ path }) => {
    if (path === "/redirect") return { status: 302, headers: { location: "http://169.254.169.254/" } };
    if (path === "/huge") return { status: 200, body: "x".repeat(1_000_000) };
    return { status: 200 };
  });
  const sender = new HttpSender({ ...options, allowPrivateTargets: true });
  t.teardown(async () => {
    await sender.close();
    await receiver.close();
  });
  const base = new URL(receiver.url).origin;
  const redirected = await sender.send({ url: `${base}/redirect`, body: "{}", headers: {}, signal });
  t.is(redirected.statusCode, 302);
  t.is(receiver.requests.length, 1, "the Location was not visited");

  const huge = await sender.send({ url: `${base}/huge`, body: "{}", headers: {}, signal });
  t.is(huge.statusCode, 200);
  t.is(huge.responseBody?.length, 64);

  const { createServer } = await import("node:http");
  const slow = createServer(() => {}); // never answers
  await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    slow.closeAllConnections();
    slow.close();
  });
  const address = slow.address() as { port: number };
  const timedOut = await sender.send({ url: `http://127.0.0.1:${address.port}/`, body: "{}", headers: {}, signal });
  t.regex(timedOut.error ?? "", /timeout: no answer within 500 ms/);
  t.true(timedOut.durationMs >= 450);

  const refused = await sender.send({ url: "http://127.0.0.1:1/", body: "{}", headers: {}, signal });
  t.regex(refused.error ?? "", /ECONNREFUSED/);
});

test("an answer a little past the cap leaves its connection open for the next request; a huge one closes it", async (t) => {
  const { createServer } = await import("node:http");
  let opened = 0;
  let closed = 0;
  let onClose = () => {};
  const aConnectionClosed = new Promise<void>((resolve) => {
    onClose = resolve;
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end(req.url === "/huge" ? "y".repeat(1_000_000) : req.url === "/over" ? "x".repeat(5_000) : "ok"));
  });
  server.on("connection", (socket) => {
    opened++;
    socket.once("close", () => {
      closed++;
      onClose();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const sender = new HttpSender({ ...options, allowPrivateTargets: true });
  t.teardown(async () => {
    await sender.close();
    server.closeAllConnections();
    server.close();
  });
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const send = (path: string) => sender.send({ url: `${base}${path}`, body: "{}", headers: {}, signal });
  for (let i = 0; i < 5; i++) await send("/short");
  const pool = opened;
  for (let i = 0; i < 5; i++) {
    const over = await send("/over");
    t.is(over.statusCode, 200);
    t.is(over.responseBody, "x".repeat(64), "the first bytes only");
  }
  t.is(opened, pool, "answers past the cap reuse the connections short answers use");
  t.is(closed, 0);
  const huge = await send("/huge");
  t.is(huge.responseBody, "y".repeat(64));
  await aConnectionClosed;
  t.is(closed, 1, "the huge answer's connection was closed");
});

test("Retry-After in seconds or as an HTTP date", (t) => {
  t.is(parseRetryAfter("120"), 120_000);
  t.is((parseRetryAfter(new Date(Date.now() + 60_000).toUTCString(), Date.now()) ?? 0 > 55_000) ? 1 : 0, 1);
  t.is(parseRetryAfter("soon"), undefined);
  t.is(parseRetryAfter(undefined), undefined);
});
