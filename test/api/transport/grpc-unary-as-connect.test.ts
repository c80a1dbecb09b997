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
import { createConnectAdapter } from "../../../src/api/transport/connect-adapter.js";
import { asConnectUnary, asGrpcResponse } from "../../../src/api/transport/grpc-unary-as-connect.js";
import { ACCEPTED_COMPRESSIONS } from "../../../src/api/transport/request-message.js";
import {
  EventService,
  PublishEventRequestSchema,
  PublishEventResponseSchema,
  RegisterEventTypeResponseSchema,
} from "../../../src/gen/webhooks/v1/event_service_pb.js";
import { grpcOverHttp2 } from "../../helpers/grpc.js";

/**
 * A gRPC unary call served as its Connect unary twin answers what
 * connect-es's own gRPC handler answers: the same message, the same status,
 * message, details and metadata in the trailers. (connect-es also names
 * grpc-encoding on an answer it did not compress; the twin names it only on
 * a compressed one, which gRPC allows.)
 */

const router = createConnectRouter({ acceptCompression: ACCEPTED_COMPRESSIONS });
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

/** The same call, through connect-es's gRPC handler and as its Connect unary twin. */
async function bothWays(body: Uint8Array, headers: Record<string, string> = {}) {
  const twin = asConnectUnary(publishHandler.method, grpcRequest(body, headers), body);
  if (!twin) throw new Error("the call was not translated");
  return {
    grpc: await read(await publishHandler(grpcRequest(body, headers))),
    translated: await read(await asGrpcResponse(await publishHandler(twin))),
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

test("a header a handler sets before it fails reaches a gRPC client in the trailers, not the headers", async (t) => {
  // Connect unary carries it among the error's metadata; the translation cannot tell them apart.
  const { grpc, translated } = await bothWays(encodeEnvelope(0, message("Order.Annotated")));
  t.is(new Headers(grpc.header).get("x-note"), "set before failing");
  t.is(new Headers(translated.header).get("x-note"), null);
  t.is(new Headers(translated.trailer).get("x-note"), "set before failing");
  t.is(new Headers(translated.trailer).get("grpc-status"), String(Code.Aborted));
});

test("the deadline: grpc-timeout becomes the handler's timeout, rounded up to whole milliseconds", async (t) => {
  const body = encodeEnvelope(0, message("Order.Created"));
  const jobOf = async (timeout: string) => {
    const twin = asConnectUnary(publishHandler.method, grpcRequest(body, { "grpc-timeout": timeout }), body);
    t.is(twin?.header.get("grpc-timeout"), null);
    const answer = await read(await asGrpcResponse(await publishHandler(twin as UniversalServerRequest)));
    return {
      header: twin?.header.get("connect-timeout-ms"),
      job: fromBinary(PublishEventResponseSchema, answer.body.subarray(5)).jobIds[0],
    };
  };
  t.deepEqual(await jobOf("60S"), { header: "60000", job: "running" });
  t.is((await jobOf("1500u")).header, "2");
  t.is((await jobOf("0n")).header, "0");
});

test("metadata a gRPC client names connect-* does not become the Connect call's protocol", async (t) => {
  const body = encodeEnvelope(0, message("Order.Created"));
  const twin = asConnectUnary(publishHandler.method, grpcRequest(body, { "connect-timeout-ms": "not a number", "x-custom": "kept" }), body);
  t.is(twin?.header.get("connect-timeout-ms"), null);
  t.is(twin?.header.get("x-custom"), "kept");
  const answer = await read(await asGrpcResponse(await publishHandler(twin as UniversalServerRequest)));
  t.is(new Headers(answer.trailer).get("grpc-status"), "0");
});

test("calls connect-es must answer itself are left to its gRPC handler", (t) => {
  const body = encodeEnvelope(0, message("Order.Created"));
  const left = (request: UniversalServerRequest, bytes = body, method = publishHandler.method) =>
    asConnectUnary(method, request, bytes) === undefined;
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
  t.true(left(grpcRequest(body, { "grpc-timeout": "soon" })), "a timeout that does not parse");
  t.true(left(grpcRequest(body, { "grpc-timeout": "99999999H" })), "a timeout Connect cannot carry");
  const stream = router.handlers.find((handler) => handler.method.methodKind === "server_streaming");
  t.truthy(stream);
  t.true(left(grpcRequest(body), body, stream?.method), "a stream of answers");
  t.true(left({ ...grpcRequest(body), method: "GET" }), "not a POST");
  t.false(left(grpcRequest(body, { "content-type": "application/grpc+proto", "grpc-encoding": "identity" })), "identity is no compression");
});

test("the adapter serves a binary gRPC unary call as Connect, and a compressed one through connect-es's gRPC path", async (t) => {
  const seen: string[] = [];
  const recording = createConnectRouter({ acceptCompression: ACCEPTED_COMPRESSIONS });
  recording.service(EventService, {
    async publishEvent(_request, context) {
      seen.push(context.protocolName);
      return create(PublishEventResponseSchema, { jobIds: ["j1"] });
    },
  });
  const adapter = createConnectAdapter(recording.handlers, {
    maxBodyBytes: 1024 * 1024,
    fallback: (_req, res) => res.end(),
  });
  const server = createHttp2Server(adapter as (req: Http2ServerRequest, res: Http2ServerResponse) => void);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const call = async (body: Uint8Array, headers: Record<string, string>) =>
    (await grpcOverHttp2(port, publishHandler.requestPath, body, headers)).trailers["grpc-status"];
  t.is(await call(encodeEnvelope(0, message("Order.Created")), {}), "0");
  t.is(await call(encodeEnvelope(1, gzipSync(message("Order.Created"))), { "grpc-encoding": "gzip" }), "0");
  t.deepEqual(seen, ["connect", "grpc"]);
});
