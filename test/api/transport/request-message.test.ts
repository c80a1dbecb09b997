import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { createAsyncIterable, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import test from "ava";
import { malformedMessage, withEmptyMessage } from "../../../src/api/transport/request-message.js";
import { CreateSubscriptionRequestSchema } from "../../../src/gen/webhooks/v1/subscription_service_pb.js";

const URL_ = "http://localhost/webhooks.v1.SubscriptionService/CreateSubscription";
const VALID = toBinary(
  CreateSubscriptionRequestSchema,
  create(CreateSubscriptionRequestSchema, { event: "Order.Created", url: "https://x.example/" }),
);
const GARBAGE = new Uint8Array([0xff, 0xff, 0xff, 0xff]);

function request(headers: Record<string, string>, url = URL_, method = "POST"): UniversalServerRequest {
  return {
    httpVersion: "1.1",
    method,
    url,
    header: new Headers(headers),
    body: createAsyncIterable([]),
    signal: new AbortController().signal,
  };
}

function envelope(message: Uint8Array, flags = 0): Uint8Array {
  const framed = new Uint8Array(5 + message.length);
  framed[0] = flags;
  new DataView(framed.buffer).setUint32(1, message.length);
  framed.set(message, 5);
  return framed;
}

const check = (req: UniversalServerRequest, body: Uint8Array) => malformedMessage(CreateSubscriptionRequestSchema, req, body, 1 << 20);

test("Connect binary bodies, plain and gzip-compressed", async (t) => {
  t.is(await check(request({ "content-type": "application/proto" }), VALID), undefined);
  t.regex(
    (await check(request({ "content-type": "application/proto" }), GARBAGE)) ?? "",
    /not a valid webhooks\.v1\.CreateSubscriptionRequest message/,
  );
  const gzip = { "content-type": "application/proto", "content-encoding": "gzip" };
  t.is(await check(request(gzip), gzipSync(VALID)), undefined);
  t.truthy(await check(request(gzip), gzipSync(GARBAGE)));
});

test("gRPC and gRPC-Web envelopes, compressed ones too", async (t) => {
  for (const type of ["application/grpc", "application/grpc+proto", "application/grpc-web+proto"]) {
    t.is(await check(request({ "content-type": type }), envelope(VALID)), undefined, type);
    t.truthy(await check(request({ "content-type": type }), envelope(GARBAGE)), type);
  }
  t.truthy(await check(request({ "content-type": "application/grpc", "grpc-encoding": "gzip" }), envelope(gzipSync(GARBAGE), 1)));
});

test("Connect GET messages in the query", async (t) => {
  const get = (message: Uint8Array) =>
    request({}, `${URL_}?encoding=proto&base64=1&message=${Buffer.from(message).toString("base64url")}`, "GET");
  t.is(await check(get(VALID), new Uint8Array()), undefined);
  t.truthy(await check(get(GARBAGE), new Uint8Array()));
});

test("JSON messages get the REST gateway's check, in every framing", async (t) => {
  const text = (json: string) => new TextEncoder().encode(json);
  const duplicate = text('{"event":"Order.Created","event":"Order.Shipped"}');
  for (const type of ["application/json", "application/json; charset=utf-8"]) {
    t.is(await check(request({ "content-type": type }), text('{"event":"Order.Created"}')), undefined, type);
    t.regex((await check(request({ "content-type": type }), duplicate)) ?? "", /the key "event" twice/, type);
  }
  t.regex((await check(request({ "content-type": "application/json" }), text("{not json"))) ?? "", /not valid JSON/);
  const gzip = { "content-type": "application/json", "content-encoding": "gzip" };
  t.regex((await check(request(gzip), gzipSync(duplicate))) ?? "", /twice/);
  for (const type of ["application/grpc-web+json", "application/grpc+json", "application/connect+json"]) {
    t.regex((await check(request({ "content-type": type }), envelope(duplicate))) ?? "", /twice/, type);
  }
  const get = `${URL_}?encoding=json&message=${encodeURIComponent('{"url":"\\ud800"}')}`;
  t.regex((await check(request({}, get, "GET"), new Uint8Array())) ?? "", /lone surrogate/);
});

test("what connect-es answers itself is left to it: unknown compressions, broken framing", async (t) => {
  t.is(await check(request({ "content-type": "application/proto", "content-encoding": "zstd" }), GARBAGE), undefined);
  t.is(await check(request({ "content-type": "application/grpc" }), GARBAGE), undefined, "an incomplete envelope");
  const grpc = request({ "content-type": "application/grpc" });
  t.is(await check(grpc, envelope(VALID).subarray(0, 8)), undefined, "an envelope cut short");
  t.is(await check(grpc, envelope(GARBAGE, 1)), undefined, "marked compressed, with no encoding named");
  t.is(await malformedMessage(CreateSubscriptionRequestSchema, grpc, envelope(VALID), 4), undefined, "a message over the limit");
});

test("every message of a body of several envelopes is checked", async (t) => {
  const grpc = request({ "content-type": "application/grpc" });
  t.is(await check(grpc, Buffer.concat([envelope(VALID), envelope(VALID)])), undefined);
  t.truthy(await check(grpc, Buffer.concat([envelope(VALID), envelope(GARBAGE)])));
});

test("the empty message that stands in for a refused one, in each framing", async (t) => {
  const bodyOf = async (req: UniversalServerRequest) => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of req.body as AsyncIterable<Uint8Array>) chunks.push(chunk);
    return Buffer.concat(chunks);
  };
  const json = withEmptyMessage(request({ "content-type": "application/json", "content-length": "9" }));
  t.is((await bodyOf(json)).toString(), "{}");
  t.is(json.header.get("content-length"), null);
  const proto = withEmptyMessage(request({ "content-type": "application/proto", "content-encoding": "gzip" }));
  t.is((await bodyOf(proto)).length, 0);
  t.is(proto.header.get("content-encoding"), null);
  const grpc = withEmptyMessage(request({ "content-type": "application/grpc", "grpc-encoding": "gzip" }));
  t.deepEqual([...(await bodyOf(grpc))], [0, 0, 0, 0, 0]);
  t.is(grpc.header.get("grpc-encoding"), null);
  const get = withEmptyMessage(request({}, `${URL_}?encoding=proto&base64=1&message=__8&compression=gzip`, "GET"));
  t.is(new URL(get.url).search, "?encoding=proto&message=");
});
