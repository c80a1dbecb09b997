import { status as grpcStatus } from "@grpc/grpc-js";
import test from "ava";
import { grpcRawCall } from "../helpers/grpc.js";
import { sharedService } from "../helpers/service.js";

const running = sharedService(test);
const CREATE = "/webhooks.v1.SubscriptionService/CreateSubscription";
/** Not a protobuf message: a field tag that never ends. */
const GARBAGE = new Uint8Array([0xff, 0xff, 0xff, 0xff]);

function envelope(message: Uint8Array): Uint8Array {
  const framed = new Uint8Array(5 + message.length);
  new DataView(framed.buffer).setUint32(1, message.length);
  framed.set(message, 5);
  return framed;
}

/** The grpc-status of a gRPC-Web answer: a header (trailers-only) or the trailer frame at the end of the body. */
function grpcWebStatus(headers: Headers, body: Uint8Array): { status: string | null; message: string | null } {
  if (headers.get("grpc-status") !== null) return { status: headers.get("grpc-status"), message: headers.get("grpc-message") };
  for (let offset = 0; offset + 5 <= body.length; ) {
    const length = new DataView(body.buffer, body.byteOffset + offset + 1, 4).getUint32(0);
    if ((body[offset] as number) & 0x80) {
      const trailers = new TextDecoder().decode(body.subarray(offset + 5, offset + 5 + length));
      const field = (name: string) => new RegExp(`^${name}:\\s*(.*?)\\r?$`, "mi").exec(trailers)?.[1] ?? null;
      return { status: field("grpc-status"), message: field("grpc-message") };
    }
    offset += 5 + length;
  }
  return { status: null, message: null };
}

test("Connect: a malformed binary message is invalid_argument (400), without credentials", async (t) => {
  const response = await fetch(`${running.baseUrl}${CREATE}`, {
    method: "POST",
    headers: { "content-type": "application/proto", "connect-protocol-version": "1" },
    body: GARBAGE,
  });
  const json = (await response.json()) as { code: string; message: string };
  t.is(response.status, 400, JSON.stringify(json));
  t.is(json.code, "invalid_argument");
  t.regex(json.message, /not a valid webhooks\.v1\.CreateSubscriptionRequest message/);
});

test("Connect GET: a malformed binary message in the query is invalid_argument (400)", async (t) => {
  const message = Buffer.from(GARBAGE).toString("base64url");
  const response = await fetch(
    `${running.baseUrl}/webhooks.v1.SubscriptionService/ListEvents?connect=v1&encoding=proto&base64=1&message=${message}`,
  );
  const json = (await response.json()) as { code: string };
  t.is(response.status, 400, JSON.stringify(json));
  t.is(json.code, "invalid_argument");
});

test("gRPC (@grpc/grpc-js): a malformed message is INVALID_ARGUMENT, without credentials", async (t) => {
  const status = await grpcRawCall(running.service.port, CREATE, GARBAGE);
  t.is(status.code, grpcStatus.INVALID_ARGUMENT, status.details);
  t.regex(status.details, /not a valid webhooks\.v1\.CreateSubscriptionRequest message/);
});

test("gRPC-Web: a malformed message is INVALID_ARGUMENT, without credentials", async (t) => {
  const response = await fetch(`${running.baseUrl}${CREATE}`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    body: envelope(GARBAGE),
  });
  const { status, message } = grpcWebStatus(response.headers, new Uint8Array(await response.arrayBuffer()));
  t.is(status, String(grpcStatus.INVALID_ARGUMENT), message ?? "");
});

test("gRPC (@grpc/grpc-js): a message over MAX_BODY_BYTES is RESOURCE_EXHAUSTED", async (t) => {
  const status = await grpcRawCall(running.service.port, CREATE, new Uint8Array(2 * 1024 * 1024));
  t.is(status.code, grpcStatus.RESOURCE_EXHAUSTED, status.details);
  t.regex(status.details, /larger than the limit/);
});
