import { once } from "node:events";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { connect as connectHttp2 } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { createConnectRouter } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import * as grpc from "@grpc/grpc-js";
import test, { type ExecutionContext } from "ava";
import { createConnectAdapter } from "../../../src/api/transport/connect-adapter.js";
import { type Listener, listen, REQUEST_LIMITS } from "../../../src/api/transport/listener.js";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "../../../src/gen/grpc/health/v1/health_pb.js";

/**
 * A server stream (here Health/Watch; the delivery watches are built the
 * same way) ends on the server when its client goes away, however it goes:
 * the call's signal, which connect-node's request gives it, aborts. Without
 * that a watch would hold its resources, and poll, for as long as the
 * process runs.
 */

const WATCH_PATH = "/grpc.health.v1.Health/Watch";
const WATCH_REQUEST = encodeEnvelope(0, toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema)));

/** A port serving Health/Watch through the adapter; each watch says SERVING once, then waits for its signal. */
async function serveWatches(t: ExecutionContext, idleSessionMs = REQUEST_LIMITS.idleSessionMs) {
  const started: Promise<void>[] = [];
  let ended = 0;
  const router = createConnectRouter();
  router.service(Health, {
    check: () => ({ status: Status.SERVING }),
    async *watch(_request, context) {
      const aborted = new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve(), { once: true }));
      started.push(aborted.then(() => void ended++));
      yield { status: Status.SERVING };
      await aborted;
    },
  });
  const adapter = createConnectAdapter(router.handlers, { maxBodyBytes: 1024, fallback: (_req, res) => res.end() });
  const listener: Listener = await listen(0, "127.0.0.1", adapter, () => {}, { ...REQUEST_LIMITS, idleSessionMs });
  t.teardown(() => listener.close(0));
  /** Resolves once the server has seen the `index`th watch end. */
  const serverEnded = async (index: number) => {
    await started[index];
    return ended;
  };
  return { port: listener.port, serverEnded };
}

/** Opens a watch over raw HTTP/2 (as a gRPC client frames it) and resolves with it once its first answer arrived. */
async function rawWatch(port: number) {
  const session = connectHttp2(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  const stream = session.request({ ":method": "POST", ":path": WATCH_PATH, "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => {});
  stream.end(WATCH_REQUEST);
  await once(stream, "data");
  return { session, stream };
}

test("gRPC (@grpc/grpc-js): a cancelled watch ends on the server", async (t) => {
  const { port, serverEnded } = await serveWatches(t);
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const call = client.makeServerStreamRequest(
    WATCH_PATH,
    (bytes: Buffer) => bytes,
    (bytes: Buffer) => bytes,
    Buffer.from(WATCH_REQUEST.subarray(5)),
  );
  const status = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  call.on("error", () => {});
  await once(call, "data");
  call.cancel();
  t.is((await status).code, grpc.status.CANCELLED);
  t.is(await serverEnded(0), 1);
});

type RawWatch = Awaited<ReturnType<typeof rawWatch>>;

const HTTP2_ENDINGS: Record<string, (watch: RawWatch) => void> = {
  "resets its stream with NO_ERROR": ({ stream }) => stream.close(0),
  // RST_STREAM CANCEL, as a gRPC client's cancel() sends it.
  "resets its stream with CANCEL": ({ stream }) => stream.close(0x8),
  "drops its connection": ({ session }) => session.destroy(),
};

for (const [how, goAway] of Object.entries(HTTP2_ENDINGS)) {
  test(`HTTP/2: a watch whose client ${how} ends on the server`, async (t) => {
    const { port, serverEnded } = await serveWatches(t);
    const watch = await rawWatch(port);
    t.teardown(() => watch.session.destroy());
    goAway(watch);
    t.is(await serverEnded(0), 1);
  });
}

test("HTTP/2: a watch on a connection the server ends as idle ends on the server", async (t) => {
  // The listener ends a session with no frame either way for this long (it uses minutes); its streams close with NO_ERROR.
  const { port, serverEnded } = await serveWatches(t, 200);
  const watch = await rawWatch(port);
  t.teardown(() => watch.session.destroy());
  t.is(await serverEnded(0), 1);
});

test("HTTP/1.1 (Connect): a watch whose client hangs up ends on the server; the others go on", async (t) => {
  const { port, serverEnded } = await serveWatches(t);
  const open = async () => {
    const req = httpRequest({
      port,
      host: "127.0.0.1",
      method: "POST",
      path: WATCH_PATH,
      headers: { "content-type": "application/connect+proto", "connect-protocol-version": "1" },
      agent: false,
    });
    req.on("error", () => {});
    req.end(WATCH_REQUEST);
    const [response] = (await once(req, "response")) as [IncomingMessage];
    await once(response, "data");
    return req;
  };
  const first = await open();
  const second = await open();
  t.teardown(() => second.destroy());
  first.destroy();
  t.is(await serverEnded(0), 1, "only the watch whose client hung up");
});
