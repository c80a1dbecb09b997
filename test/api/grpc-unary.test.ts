import { once } from "node:events";
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import { gunzipSync, gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, createContextValues } from "@connectrpc/connect";
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
import { answerGrpcUnary, type GrpcAnswer, grpcUnaryCall, recordingUnaryMethods } from "../../src/api/grpc-unary.js";
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

const { router, methods } = recordingUnaryMethods(createConnectRouter({ acceptCompression: ACCEPTED_COMPRESSIONS }));
router.service(EventService, {
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
    context.responseTrailer.set("x-seen", "yes");
    // The handler's deadline, as it reads it, is the answer's job id.
    const left = context.timeoutMs();
    return create(PublishEventResponseSchema, { jobIds: [left === undefined ? "none" : left > 0 ? "running" : "expired"] });
  },
});
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

/** The same call, through connect-es's gRPC handler and through the lane. */
async function bothWays(body: Uint8Array, headers: Record<string, string> = {}) {
  const call = laneCall(body, headers);
  if (!call) throw new Error("the lane did not take the call");
  return {
    grpc: await read(await publishHandler(grpcRequest(body, headers))),
    translated: laneAnswer(await answerGrpcUnary(call)),
  };
}

test("a successful call: the same message, headers and trailers as connect-es's gRPC handler", async (t) => {
  const { grpc, translated } = await bothWays(encodeEnvelope(0, message("Order.Created")));
  t.deepEqual(translated, grpc);
  t.deepEqual(translated.header, [["content-type", "application/grpc+proto"]]);
  t.deepEqual(fromBinary(PublishEventResponseSchema, translated.body.subarray(5)).jobIds, ["none"]);
  t.deepEqual(translated.trailer, [
    ["grpc-status", "0"],
    ["x-seen", "yes"],
  ]);
});

test("an error: the same status, message, details and metadata in the trailers", async (t) => {
  const { grpc, translated } = await bothWays(encodeEnvelope(0, message("Order.Failed")));
  t.deepEqual(translated, grpc);
  const trailer = new Headers(translated.trailer);
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
  t.is(translated.body.byteLength, 0);
});

test("an unexpected error is internal, as connect-es answers it", async (t) => {
  const { grpc, translated } = await bothWays(encodeEnvelope(0, message("Order.Crashed")));
  t.deepEqual(translated, grpc);
  t.is(new Headers(translated.trailer).get("grpc-status"), String(Code.Internal));
});

test("a large answer is compressed with what the client accepts, as connect-es's gRPC handler compresses it", async (t) => {
  const accepts = { "grpc-accept-encoding": "identity,deflate,gzip" };
  const { grpc, translated } = await bothWays(encodeEnvelope(0, message("Order.Many")), accepts);
  t.deepEqual(translated.trailer, grpc.trailer);
  t.is(translated.body[0], 1, "the envelope is marked compressed");
  t.deepEqual(translated.header, grpc.header);
  t.is(new Headers(translated.header).get("grpc-encoding"), "gzip");
  t.deepEqual(gunzipSync(translated.body.subarray(5)), gunzipSync(grpc.body.subarray(5)));
  t.is(fromBinary(PublishEventResponseSchema, gunzipSync(translated.body.subarray(5))).jobIds.length, 100);
  // A small answer is not compressed, accepted or not.
  const small = await bothWays(encodeEnvelope(0, message("Order.Created")), accepts);
  t.deepEqual(small.translated.trailer, small.grpc.trailer);
  t.deepEqual(small.translated.body, small.grpc.body);
  t.is(small.translated.body[0], 0);
  // Without grpc-accept-encoding, nothing is compressed.
  const plain = await bothWays(encodeEnvelope(0, message("Order.Many")));
  t.deepEqual(plain.translated, plain.grpc);
  t.is(plain.translated.body[0], 0);
});

test("a long error (its JSON compressed by Connect) keeps its message", async (t) => {
  const { grpc, translated } = await bothWays(encodeEnvelope(0, message("Order.Verbose")), { "grpc-accept-encoding": "gzip" });
  t.deepEqual(translated.trailer, grpc.trailer);
  t.regex(decodeURIComponent(new Headers(translated.trailer).get("grpc-message") ?? ""), /^too long: x{2000}$/);
});

test("a header a handler sets before it fails stays among the headers, as connect-es's gRPC handler sends it", async (t) => {
  const { grpc, translated } = await bothWays(encodeEnvelope(0, message("Order.Annotated")));
  t.deepEqual(translated, grpc);
  t.is(new Headers(translated.header).get("x-note"), "set before failing");
  t.is(new Headers(translated.trailer).get("grpc-status"), String(Code.Aborted));
});

test("the deadline: grpc-timeout is the handler's timeout, as connect-es's gRPC handler gives it", async (t) => {
  const body = encodeEnvelope(0, message("Order.Created"));
  // (A deadline of a few ms may pass on one path and not the other: the lane reaches the handler sooner.)
  for (const timeout of ["60S", "0n"]) {
    const { grpc, translated } = await bothWays(body, { "grpc-timeout": timeout });
    t.deepEqual(translated, grpc, timeout);
  }
  const jobOf = async (timeout: string) =>
    fromBinary(
      PublishEventResponseSchema,
      laneAnswer(await answerGrpcUnary(laneCall(body, { "grpc-timeout": timeout }) as never)).body.subarray(5),
    ).jobIds[0];
  t.is(await jobOf("60S"), "running");
  t.is(await jobOf("0n"), "expired");
});

test("the handler reads the gRPC call's metadata", async (t) => {
  const seen: Array<string | null> = [];
  const { router: metadataRouter, methods: metadataMethods } = recordingUnaryMethods(createConnectRouter());
  metadataRouter.service(EventService, {
    async publishEvent(_request, context) {
      seen.push(context.requestHeader.get("x-custom"), context.protocolName);
      return create(PublishEventResponseSchema, { jobIds: ["j1"] });
    },
  });
  const body = encodeEnvelope(0, message("Order.Created"));
  const call = grpcUnaryCall(metadataMethods.get(publishHandler.requestPath), grpcRequest(body, { "x-custom": "kept" }), body);
  const answer = await answerGrpcUnary(call as never);
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
  const { router: served, methods: servedMethods } = recordingUnaryMethods(
    createConnectRouter({ acceptCompression: ACCEPTED_COMPRESSIONS }),
  );
  served.service(EventService, {
    async publishEvent(request, context) {
      context.signal.addEventListener("abort", () => reasons.push(context.signal.reason));
      if (request.event === "Order.Failed") throw new ConnectError("no such event: Order.Failed; see /docs", Code.FailedPrecondition);
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
  t.is((await call(encodeEnvelope(1, gzipSync(message("Order.Created"))), { "grpc-encoding": "gzip" })).trailers["grpc-status"], "0");
  t.is(reasons.length, 3);
  t.true(reasons[0] instanceof ConnectError && reasons[1] instanceof ConnectError, "the lane's calls end with its own reason");
  t.is((reasons[2] as Error).name, "AbortError", "connect-es's gRPC path ends the call with a DOMException");
});
