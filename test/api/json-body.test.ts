import { encodeEnvelope } from "@connectrpc/connect/protocol";
import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, sharedService } from "../helpers/service.js";

// One JSON check for every path a JSON body takes: REST, Connect and gRPC-Web.
const running = sharedService(test);
let receiver: Receiver;
let subscribed: { clientId: string; subscriptionId: string; auth: Record<string, string> };

// Serial: ava runs hooks side by side, and this one needs the service's.
test.serial.before(async () => {
  receiver = await Receiver.start();
  const client = await createClient(running.baseUrl, "JSON checks");
  const created = await postSubscription(running.baseUrl, { event: "Order.Created", url: receiver.url }, client.auth);
  if (created.status !== 200) throw new Error(created.text);
  subscribed = { clientId: client.id, subscriptionId: created.json.id as string, auth: client.auth };
});

test.after.always(async () => {
  await receiver?.close();
});

const PAYLOAD = '{"OrderId":"ord_1","CustomerId":"cus_1","TotalAmount":1,"Currency":"EUR"}';

/** A PublishEvent body as text, so that it can say what JSON.stringify never would. */
const publishText = (fields: string) => `{${fields},"event":"Order.Created","payload":${PAYLOAD}}`;

interface Refusal {
  status: number;
  code: string;
  message: string;
}

const paths: Record<string, (body: Uint8Array) => Promise<Refusal>> = {
  async REST(body) {
    const response = await fetch(`${running.baseUrl}/api/internal/events/publish`, {
      method: "POST",
      headers: { ...adminAuth, "content-type": "application/json" },
      body,
    });
    const json = (await response.json()) as { code?: string; message?: string };
    return { status: response.status, code: json.code ?? "ok", message: json.message ?? "" };
  },
  async Connect(body) {
    const response = await fetch(`${running.baseUrl}/webhooks.v1.EventService/PublishEvent`, {
      method: "POST",
      headers: { ...adminAuth, "content-type": "application/json", "connect-protocol-version": "1" },
      body,
    });
    const json = (await response.json()) as { code?: string; message?: string };
    return { status: response.status, code: json.code ?? "ok", message: json.message ?? "" };
  },
  async "gRPC-Web"(body) {
    const response = await fetch(`${running.baseUrl}/webhooks.v1.EventService/PublishEvent`, {
      method: "POST",
      headers: { ...adminAuth, "content-type": "application/grpc-web+json", "x-grpc-web": "1" },
      body: encodeEnvelope(0, body),
    });
    // A refusal comes trailers-only (in the headers) or as the body's trailer frame.
    let trailers = new Headers(response.headers);
    const bytes = new Uint8Array(await response.arrayBuffer());
    for (let offset = 0; offset + 5 <= bytes.length; ) {
      const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
      if ((bytes[offset] as number) & 0x80) {
        const text = new TextDecoder().decode(bytes.subarray(offset + 5, offset + 5 + length));
        trailers = new Headers(text.split("\r\n").flatMap((line) => (line ? [line.split(/:\s*/, 2) as [string, string]] : [])));
      }
      offset += 5 + length;
    }
    const grpcStatus = trailers.get("grpc-status") ?? "";
    const code = grpcStatus === "0" ? "ok" : grpcStatus === "3" ? "invalid_argument" : `grpc-status ${grpcStatus}`;
    return { status: response.status, code, message: decodeURIComponent(trailers.get("grpc-message") ?? "") };
  },
};

const encode = (text: string) => new TextEncoder().encode(text);

const BAD: Array<[string, () => Uint8Array, RegExp]> = [
  ["a __proto__ key", () => encode(publishText(`"clientId":"${subscribed.clientId}","__proto__":{"x":1}`)), /__proto__/],
  [
    "invalid UTF-8",
    () =>
      Buffer.concat([
        encode(publishText(`"clientId":"${subscribed.clientId}","idempotencyKey":"`)).subarray(0, -1),
        Buffer.from([0xff, 0x22, 0x7d]),
      ]),
    /not valid UTF-8/,
  ],
  ["a lone surrogate", () => encode(publishText(`"clientId":"${subscribed.clientId}","idempotencyKey":"k\\ud800"`)), /lone surrogate/],
  ["a lone surrogate in a key", () => encode(publishText(`"clientId":"${subscribed.clientId}","\\udc00":1`)), /lone surrogate/],
  [
    "the key clientId twice",
    () => encode(publishText(`"clientId":"cli_other","clientId":"${subscribed.clientId}"`)),
    /the key "clientId" twice/,
  ],
  [
    "a key twice inside the payload",
    () => encode(`{"clientId":"${subscribed.clientId}","event":"Order.Created","payload":{"OrderId":"a","OrderId":"b"}}`),
    /the key "OrderId" twice/,
  ],
];

for (const [path, send] of Object.entries(paths)) {
  for (const [name, body, message] of BAD) {
    test(`${path}: a body with ${name} is invalid_argument and publishes nothing`, async (t) => {
      const answer = await send(body());
      t.is(answer.code, "invalid_argument", JSON.stringify(answer));
      if (path !== "gRPC-Web") t.is(answer.status, 400);
      t.regex(answer.message, message);
    });
  }

  test(`${path}: a well-formed body publishes, a surrogate pair (an emoji) included`, async (t) => {
    const answer = await send(encode(publishText(`"clientId":"${subscribed.clientId}","idempotencyKey":"${path}-\\ud83d\\ude00"`)));
    t.is(answer.code, "ok", JSON.stringify(answer));
  });
}

test.after("nothing refused was published: only the well-formed bodies reached the receiver", async (t) => {
  const log = await rest(
    running.baseUrl,
    "GET",
    `/api/webhookSubscription/${subscribed.subscriptionId}/notifications`,
    undefined,
    subscribed.auth,
  );
  t.is((log.json.notifications as unknown[]).length, Object.keys(paths).length, log.text);
});
