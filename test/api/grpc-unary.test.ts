import { once } from "node:events";
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import { gunzipSync, gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type Interceptor } from "@connectrpc/connect";
import {
  createAsyncIterable,
  encodeEnvelope,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import test from "ava";
import { ACCEPTED_COMPRESSIONS } from "../../src/api/binary-message.js";
import { createConnectAdapter } from "../../src/api/connect-adapter.js";
import { answerGrpcUnary, createRecordingRouter, type GrpcAnswer, grpcUnaryCall } from "../../src/api/grpc-unary.js";
import {
  EventService,
  PublishEventRequestSchema,
  PublishEventResponseSchema,
  RegisterEventTypeResponseSchema,
} from "../../src/gen/webhooks/v1/event_service_pb.js";
import { grpcOverHttp2 } from "../helpers/grpc.js";

/**
 * A binary gRPC unary call served by the lane (grpc-unary.ts) answers what
 * connect-es's own gRPC handler answers: the same message, headers, status,
 * message, details and metadata in the trailers.
 */

/** Interceptors around the service, as routes.ts puts them: one adds metadata, one refuses some calls. */
const annotate: Interceptor = (next) => async (request) => {
  const response = await next(request);
  response.header.set("x-intercepted", request.header.get("x-caller") ?? "anonymous");
  return response;
};
const refuse: Interceptor = (next) => async (request) => {
  if (request.header.has("x-refuse")) throw new ConnectError("refused here", Code.PermissionDenied, { "x-why": "a test" });
  return next(request);
};
/** The signals the handler was given for "Order.Watched" and "Order.Waiting" calls. */
const signals: AbortSignal[] = [];
const { router, methods } = createRecordingRouter({ acceptCompression: ACCEPTED_COMPRESSIONS });
router.service(
  EventService,
  {
    async publishEvent(request, context) {
      if (request.event === "Order.Failed") {
        throw new ConnectError("no such event: Order.Failed (ü%)", Code.FailedPrecondition, { "retry-after": "3" }, [
          { desc: RegisterEventTypeResponseSchema, value: {} },
        ]);
      }
      if (request.event === "Order.Crashed") throw new Error("a bug");
      if (request.event === "Order.Verbose") throw new ConnectError(`too long: ${"x".repeat(2_000)}`, Code.InvalidArgument);
      if (request.event === "Order.Annotated") {
        context.responseHeader.set("x-note", "set before failing");
        throw new ConnectError("failed after a header", Code.Aborted);
      }
      // Over 1 KiB: compressed when the client accepts it.
      if (request.event === "Order.Many")
        return create(PublishEventResponseSchema, { jobIds: Array.from({ length: 100 }, (_, i) => `job-${i}-${"x".repeat(20)}`) });
      if (request.event === "Order.Watched" || request.event === "Order.Waiting") {
        const { signal } = context;
        signals.push(signal);
        if (request.event === "Order.Waiting" && !signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve));
        const reason = signal.aborted ? ConnectError.from(signal.reason) : undefined;
        return create(PublishEventResponseSchema, { jobIds: [reason ? Code[reason.code] : "open"] });
      }
      context.responseTrailer.set("x-seen", "yes");
      // The handler's deadline, as it reads it, is the answer's job id.
      const left = context.timeoutMs();
      return create(PublishEventResponseSchema, { jobIds: [left === undefined ? "none" : left > 0 ? "running" : "expired"] });
    },
  },
  { interceptors: [annotate, refuse] },
);
const handlers = new Map(router.handlers.map((handler) => [handler.method.name, handler]));
const publishHandler = handlers.get("PublishEvent") as UniversalHandler;

function message(event: string): Uint8Array {
  return toBinary(PublishEventRequestSchema, create(PublishEventRequestSchema, { clientId: "c1", event, payload: { a: 1 } }));
}

function grpcRequest(body: Uint8Array, headers: Record<string, string> = {}): UniversalServerRequest {
  return {
    httpVersion: "2.0",
    method: "POST",
    url: `http://127.0.0.1${publishHandler.requestPath}`,
    header: new Headers({ "content-type": "application/grpc", te: "trailers", "content-length": String(body.byteLength), ...headers }),
    body: createAsyncIterable([body]),
    signal: new AbortController().signal,
    contextValues: createContextValues(),
  };
}

interface Answer {
  status: number;
  header: Array<[string, string]>;
  body: Uint8Array;
  trailer: Array<[string, string]>;
}

async function read(response: UniversalServerResponse): Promise<Answer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body ?? []) chunks.push(chunk);
  return {
    status: response.status,
    header: [...(response.header ?? new Headers())].sort(),
    body: Buffer.concat(chunks),
    trailer: [...(response.trailer ?? new Headers())].sort(),
  };
}

function laneAnswer(answer: GrpcAnswer): Answer {
  return {
    status: 200,
    header: [...answer.header].sort(),
    body: Buffer.from(answer.envelope ?? new Uint8Array(0)),
    trailer: [...answer.trailer].sort(),
  };
}

function laneCall(body: Uint8Array, headers: Record<string, string> = {}) {
  return grpcUnaryCall(methods.get(publishHandler.requestPath), grpcRequest(body, headers), body);
}

/** A call the lane took: a test fails here if it did not. */
function taken<T>(call: T | undefined): T {
  if (!call) throw new Error("the lane did not take the call");
  return call;
}

/** The same call, through connect-es's gRPC handler and through the lane. */
async function bothWays(body: Uint8Array, headers: Record<string, string> = {}) {
  const call = taken(laneCall(body, headers));
  return {
    grpc: await read(await publishHandler(grpcRequest(body, headers))),
    lane: laneAnswer(await answerGrpcUnary(call)),
  };
}

test("a successful call: the same message, headers and trailers as connect-es's gRPC handler", async (t) => {
  const { grpc, lane } = await bothWays(encodeEnvelope(0, message("Order.Created")));
  t.deepEqual(lane, grpc);
  t.deepEqual(lane.header, [
    ["content-type", "application/grpc+proto"],
    ["x-intercepted", "anonymous"],
  ]);
  t.deepEqual(fromBinary(PublishEventResponseSchema, lane.body.subarray(5)).jobIds, ["none"]);
  t.deepEqual(lane.trailer, [
    ["grpc-status", "0"],
    ["x-seen", "yes"],
  ]);
});

test("an error: the same status, message, details and metadata in the trailers", async (t) => {
  const { grpc, lane } = await bothWays(encodeEnvelope(0, message("Order.Failed")));
  t.deepEqual(lane, grpc);
  const trailer = new Headers(lane.trailer);
  t.is(trailer.get("grpc-status"), String(Code.FailedPrecondition));
  t.is(decodeURIComponent(trailer.get("grpc-message") ?? ""), "no such event: Order.Failed (ü%)");
  t.is(trailer.get("retry-after"), "3");
  // What a gRPC client reads from the trailers: connect-es's own reader.
  const error = findTrailerError(trailer);
  t.is(error?.code, Code.FailedPrecondition);
  t.deepEqual(
    error?.details.map((detail) => ("type" in detail ? detail.type : detail.desc.typeName)),
    ["webhooks.v1.RegisterEventTypeResponse"],
  );
  t.is(lane.body.byteLength, 0);
});

test("an unexpected error is internal, as connect-es answers it", async (t) => {
  const { grpc, lane } = await bothWays(encodeEnvelope(0, message("Order.Crashed")));
  t.deepEqual(lane, grpc);
  t.is(new Headers(lane.trailer).get("grpc-status"), String(Code.Internal));
});

test("the service's interceptors run around the call, their metadata and refusals answered as connect-es's gRPC handler answers them", async (t) => {
  const { grpc, lane } = await bothWays(encodeEnvelope(0, message("Order.Created")), { "x-caller": "billing" });
  t.deepEqual(lane, grpc);
  t.is(new Headers(lane.header).get("x-intercepted"), "billing");
  const refused = await bothWays(encodeEnvelope(0, message("Order.Created")), { "x-refuse": "yes" });
  t.deepEqual(refused.lane, refused.grpc);
  t.is(new Headers(refused.lane.trailer).get("grpc-status"), String(Code.PermissionDenied));
  t.is(new Headers(refused.lane.trailer).get("x-why"), "a test");
});

test("what the router was given decides what the lane serves: the router's interceptors, rpc(), not a method kept off gRPC or served with options it does not honour", async (t) => {
  const seen: string[] = [];
  const routerLevel: Interceptor = (next) => async (request) => {
    seen.push(request.method.name);
    return next(request);
  };
  const publishEvent = async () => create(PublishEventResponseSchema, { jobIds: ["j1"] });
  const first = createRecordingRouter({ interceptors: [routerLevel] });
  first.router.service(EventService, { publishEvent });
  const recorded = first.methods.get(publishHandler.requestPath);
  t.deepEqual(recorded?.interceptors, [routerLevel], "a service without interceptors of its own gets the router's");
  const body = encodeEnvelope(0, message("Order.Created"));
  await answerGrpcUnary(taken(grpcUnaryCall(recorded, grpcRequest(body), body)));
  t.deepEqual(seen, ["PublishEvent"]);

  const single = createRecordingRouter();
  single.router.rpc(EventService.method.publishEvent, publishEvent);
  t.truthy(single.methods.get(publishHandler.requestPath), "rpc()");
  const offGrpc = createRecordingRouter({ grpc: false });
  offGrpc.router.service(EventService, { publishEvent });
  t.is(offGrpc.methods.get(publishHandler.requestPath), undefined, "grpc: false");
  const own: Interceptor = (next) => next;
  const replaced = createRecordingRouter({ interceptors: [routerLevel] });
  replaced.router.service(EventService, { publishEvent }, { interceptors: [own] });
  t.deepEqual(replaced.methods.get(publishHandler.requestPath)?.interceptors, [own], "a service's own interceptors replace the router's");
  const twice = createRecordingRouter();
  twice.router.service(EventService, { publishEvent });
  twice.router.rpc(EventService.method.publishEvent, publishEvent, { writeMaxBytes: 1024 });
  t.is(twice.methods.get(publishHandler.requestPath), undefined, "registered again with an option the lane does not honour");
  const closing = createRecordingRouter({ shutdownSignal: new AbortController().signal });
  closing.router.service(EventService, { publishEvent });
  t.is(closing.methods.get(publishHandler.requestPath), undefined, "a shutdown signal");
  t.is(closing.router.handlers.length > 0, true);
});

test("a large answer is compressed with what the client accepts, as connect-es's gRPC handler compresses it", async (t) => {
  const accepts = { "grpc-accept-encoding": "identity,deflate,gzip" };
  const { grpc, lane } = await bothWays(encodeEnvelope(0, message("Order.Many")), accepts);
  t.deepEqual(lane.trailer, grpc.trailer);
  t.is(lane.body[0], 1, "the envelope is marked compressed");
  t.deepEqual(lane.header, grpc.header);
  t.is(new Headers(lane.header).get("grpc-encoding"), "gzip");
  t.deepEqual(gunzipSync(lane.body.subarray(5)), gunzipSync(grpc.body.subarray(5)));
  t.is(fromBinary(PublishEventResponseSchema, gunzipSync(lane.body.subarray(5))).jobIds.length, 100);
  // A small answer is not compressed, accepted or not.
  const small = await bothWays(encodeEnvelope(0, message("Order.Created")), accepts);
  t.deepEqual(small.lane.trailer, small.grpc.trailer);
  t.deepEqual(small.lane.body, small.grpc.body);
  t.is(small.lane.body[0], 0);
  // Without grpc-accept-encoding, nothing is compressed.
  const plain = await bothWays(encodeEnvelope(0, message("Order.Many")));
  t.deepEqual(plain.lane, plain.grpc);
  t.is(plain.lane.body[0], 0);
});

test("a long error keeps its message", async (t) => {
  const { grpc, lane } = await bothWays(encodeEnvelope(0, message("Order.Verbose")), { "grpc-accept-encoding": "gzip" });
  t.deepEqual(lane.trailer, grpc.trailer);
  t.regex(decodeURIComponent(new Headers(lane.trailer).get("grpc-message") ?? ""), /^too long: x{2000}$/);
});

test("a header a handler sets before it fails stays among the headers, as connect-es's gRPC handler sends it", async (t) => {
  const { grpc, lane } = await bothWays(encodeEnvelope(0, message("Order.Annotated")));
  t.deepEqual(lane, grpc);
  t.is(new Headers(lane.header).get("x-note"), "set before failing");
  t.is(new Headers(lane.trailer).get("grpc-status"), String(Code.Aborted));
});

test("the deadline: grpc-timeout is the handler's timeout, as connect-es's gRPC handler gives it", async (t) => {
  const body = encodeEnvelope(0, message("Order.Created"));
  // (A deadline of a few ms may pass on one path and not the other: the lane reaches the handler sooner.)
  for (const timeout of ["60S", "0n"]) {
    const { grpc, lane } = await bothWays(body, { "grpc-timeout": timeout });
    t.deepEqual(lane, grpc, timeout);
  }
  const jobOf = async (timeout: string) =>
    fromBinary(
      PublishEventResponseSchema,
      laneAnswer(await answerGrpcUnary(taken(laneCall(body, { "grpc-timeout": timeout })))).body.subarray(5),
    ).jobIds[0];
  t.is(await jobOf("60S"), "running");
  t.is(await jobOf("0n"), "expired");
});

test("given the request's own controller, the call's signal is the request's: aborted at the deadline, and once answered", async (t) => {
  const answered = async (event: string, headers: Record<string, string>, controller?: AbortController) => {
    const body = encodeEnvelope(0, message(event));
    const request = { ...grpcRequest(body, headers), ...(controller ? { signal: controller.signal } : {}) };
    const answer = await answerGrpcUnary(taken(grpcUnaryCall(methods.get(publishHandler.requestPath), request, body, controller)));
    const signal = signals.at(-1);
    t.is(signal === request.signal, controller !== undefined, "the request's own signal only when its controller is given");
    t.true(signal?.aborted, "aborted once answered");
    return fromBinary(PublishEventResponseSchema, laneAnswer(answer).body.subarray(5)).jobIds[0];
  };
  for (const given of [true, false]) {
    const controller = () => (given ? new AbortController() : undefined);
    t.is(await answered("Order.Watched", {}, controller()), "open", `given: ${given}`);
    t.is(await answered("Order.Watched", { "grpc-timeout": "0n" }, controller()), "DeadlineExceeded", `already past, given: ${given}`);
    t.is(
      await answered("Order.Waiting", { "grpc-timeout": "50m" }, controller()),
      "DeadlineExceeded",
      `passed during the call, given: ${given}`,
    );
  }
  const gone = new AbortController();
  gone.abort(new ConnectError("the client went away", Code.Canceled));
  t.is(await answered("Order.Watched", { "grpc-timeout": "60S" }, gone), "Canceled", "a client gone before the call");
});

test("the handler reads the gRPC call's metadata", async (t) => {
  const seen: Array<string | null> = [];
  const { router: metadataRouter, methods: metadataMethods } = createRecordingRouter();
  metadataRouter.service(EventService, {
    async publishEvent(_request, context) {
      seen.push(context.requestHeader.get("x-custom"), context.protocolName);
      return create(PublishEventResponseSchema, { jobIds: ["j1"] });
    },
  });
  const body = encodeEnvelope(0, message("Order.Created"));
  const call = grpcUnaryCall(metadataMethods.get(publishHandler.requestPath), grpcRequest(body, { "x-custom": "kept" }), body);
  const answer = await answerGrpcUnary(taken(call));
  t.is(answer.trailer.get("grpc-status"), "0");
  t.deepEqual(seen, ["kept", "grpc"]);
});

test("calls connect-es must answer itself are left to its gRPC handler", (t) => {
  const body = encodeEnvelope(0, message("Order.Created"));
  const publish = methods.get(publishHandler.requestPath);
  const left = (request: UniversalServerRequest, bytes = body, method = publish) => grpcUnaryCall(method, request, bytes) === undefined;
  t.true(left(grpcRequest(body, { "content-type": "application/grpc-web+proto" })), "gRPC-Web");
  t.true(left(grpcRequest(body, { "content-type": "application/grpc+json" })), "gRPC with JSON");
  t.true(left(grpcRequest(body, { "grpc-encoding": "gzip" })), "a compressed message");
  const flagged = encodeEnvelope(1, message("Order.Created"));
  t.true(left(grpcRequest(flagged), flagged), "an envelope marked compressed");
  const two = Buffer.concat([body, body]);
  t.true(left(grpcRequest(two), two), "two messages");
  const cut = body.subarray(0, body.byteLength - 1);
  t.true(left(grpcRequest(cut), cut), "a message cut short");
  t.true(left(grpcRequest(new Uint8Array(3)), new Uint8Array(3)), "less than an envelope header");
  const garbage = encodeEnvelope(0, new Uint8Array([0xff, 0xff, 0xff]));
  t.true(left(grpcRequest(garbage), garbage), "a message that does not parse");
  t.true(left(grpcRequest(body, { "grpc-timeout": "soon" })), "a timeout that does not parse");
  const stream = router.handlers.find((handler) => handler.method.methodKind === "server_streaming");
  t.truthy(stream);
  t.is(methods.get(stream?.requestPath ?? ""), undefined, "a stream of answers has no lane");
  t.is(grpcUnaryCall(undefined, grpcRequest(body), body), undefined, "a method the router was not given");
  t.true(left({ ...grpcRequest(body), method: "GET" }), "not a POST");
  t.false(left(grpcRequest(body, { "content-type": "application/grpc+proto", "grpc-encoding": "identity" })), "identity is no compression");
});

test("the adapter serves a binary gRPC unary call through the lane, and a compressed one through connect-es's gRPC path", async (t) => {
  // connect-es ends each call by aborting its signal without a reason (a DOMException); the lane, with its own.
  const reasons: unknown[] = [];
  const { router: served, methods: servedMethods } = createRecordingRouter({ acceptCompression: ACCEPTED_COMPRESSIONS });
  served.service(EventService, {
    async publishEvent(request, context) {
      context.signal.addEventListener("abort", () => reasons.push(context.signal.reason));
      if (request.event === "Order.Failed") throw new ConnectError("no such event: Order.Failed; see /docs", Code.FailedPrecondition);
      if (request.event === "Order.Hop") {
        // Connection-specific: HTTP/2 forbids them, and Node would throw on them (for trailers, from its own event).
        context.responseHeader.set("transfer-encoding", "chunked");
        context.responseTrailer.set("connection", "close");
      }
      return create(PublishEventResponseSchema, { jobIds: ["j1"] });
    },
  });
  const adapter = createConnectAdapter(served.handlers, {
    maxBodyBytes: 1024 * 1024,
    unaryMethods: servedMethods,
    fallback: (_req, res) => res.end(),
  });
  const server = createHttp2Server(adapter as (req: Http2ServerRequest, res: Http2ServerResponse) => void);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const call = (body: Uint8Array, headers: Record<string, string> = {}) => grpcOverHttp2(port, publishHandler.requestPath, body, headers);
  const ok = await call(encodeEnvelope(0, message("Order.Created")));
  t.is(ok.trailers["grpc-status"], "0");
  t.deepEqual(fromBinary(PublishEventResponseSchema, ok.body.subarray(5)).jobIds, ["j1"]);
  const failed = await call(encodeEnvelope(0, message("Order.Failed")));
  t.is(failed.trailers["grpc-status"], String(Code.FailedPrecondition));
  // grpc-message encoded as the gRPC spec says: printable ASCII as is.
  t.is(failed.trailers["grpc-message"], "no such event: Order.Failed; see /docs");
  const hop = await call(encodeEnvelope(0, message("Order.Hop")));
  t.is(hop.trailers["grpc-status"], "0", "connection-specific headers are left out, not fatal");
  t.is(hop.headers["transfer-encoding"], undefined);
  t.is((await call(encodeEnvelope(1, gzipSync(message("Order.Created"))), { "grpc-encoding": "gzip" })).trailers["grpc-status"], "0");
  t.is(reasons.length, 4);
  t.true(
    reasons.slice(0, 3).every((reason) => reason instanceof ConnectError),
    "the lane's calls end with its own reason, or their error",
  );
  t.is((reasons[1] as ConnectError).code, Code.FailedPrecondition);
  t.is((reasons[3] as Error).name, "AbortError", "connect-es's gRPC path ends the call with a DOMException");
});
