import { gunzipSync, gzipSync } from "node:zlib";
import { create, type DescMessage, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import {
  CreateSubscriptionRequestSchema,
  type CreateSubscriptionResponse,
  CreateSubscriptionResponseSchema,
  ListEventsRequestSchema,
  type ListEventsResponse,
  ListEventsResponseSchema,
  SubscriptionService,
} from "../../src/gen/webhooks/v1/subscription_service_pb.js";
import { grpcCall, grpcOverHttp2 } from "../helpers/grpc.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, sharedService } from "../helpers/service.js";

/** The service's answer to a subscription to an event it does not know: printable, with `;` and `/` in it. */
const UNKNOWN_EVENT = 'unknown event "No.Such"; GET /api/webhookSubscription/events lists the available events';

// Protocol tests need one service; the store matrix is covered by the flow tests.
const running = sharedService(test);
const receiver = Receiver.shared(test);

const auth = { authorization: `Bearer ${API_KEY}` };

const grpc_ = (method: string, input: DescMessage, output: DescMessage, request: object, key = API_KEY) =>
  grpcCall(running.service.port, SubscriptionService, method, input, output, request as never, key);

test("gRPC (@grpc/grpc-js): list events and create a subscription", async (t) => {
  const events = (await grpc_("ListEvents", ListEventsRequestSchema, ListEventsResponseSchema, {})) as ListEventsResponse;
  t.true(events.events.some((e) => e.name === "Order.Created"));
  const created = (await grpc_("CreateSubscription", CreateSubscriptionRequestSchema, CreateSubscriptionResponseSchema, {
    event: "Order.Shipped",
    url: receiver.url,
  })) as CreateSubscriptionResponse;
  t.is(created.subscription?.event, "Order.Shipped");
  t.regex(created.subscription?.signatureKey ?? "", /BEGIN PUBLIC KEY/);
});

test("gRPC (@grpc/grpc-js): a wrong key is UNAUTHENTICATED, an unknown event INVALID_ARGUMENT", async (t) => {
  const unauthenticated = await t.throwsAsync(grpc_("ListEvents", ListEventsRequestSchema, ListEventsResponseSchema, {}, "not-a-key"));
  t.is((unauthenticated as grpc.ServiceError).code, grpc.status.UNAUTHENTICATED);
  const invalid = await t.throwsAsync(
    grpc_("CreateSubscription", CreateSubscriptionRequestSchema, CreateSubscriptionResponseSchema, { event: "No.Such", url: receiver.url }),
  );
  t.is((invalid as grpc.ServiceError).code, grpc.status.INVALID_ARGUMENT);
  // grpc-message is percent-encoded as the gRPC spec says, so grpc-js (which decodes it with decodeURI) reads it as written.
  t.is((invalid as grpc.ServiceError).details, UNKNOWN_EVENT);
});

test("gRPC framed by hand: grpc-message is percent-encoded as the gRPC spec says, compressed or not", async (t) => {
  const path = "/webhooks.v1.SubscriptionService/CreateSubscription";
  const request = encodeEnvelope(
    0,
    toBinary(CreateSubscriptionRequestSchema, create(CreateSubscriptionRequestSchema, { event: "No.Such", url: receiver.url })),
  );
  // Printable ASCII other than % as it is; anything else, and %, as %XX of its UTF-8 bytes.
  const unary = await grpcOverHttp2(running.service.port, path, request, { authorization: `Bearer ${API_KEY}` });
  t.is(unary.trailers["grpc-status"], String(grpc.status.INVALID_ARGUMENT));
  t.is(unary.trailers["grpc-message"], UNKNOWN_EVENT);
  // The same for a compressed call.
  const compressed = await grpcOverHttp2(running.service.port, path, encodeEnvelope(1, gzipSync(request.subarray(5))), {
    authorization: `Bearer ${API_KEY}`,
    "grpc-encoding": "gzip",
  });
  t.is(compressed.trailers["grpc-status"], String(grpc.status.INVALID_ARGUMENT));
  t.is(compressed.trailers["grpc-message"], UNKNOWN_EVENT);
});

test("gRPC framed by hand: a large answer comes gzipped when the client accepts gzip; a refusal's status in the trailers", async (t) => {
  const path = "/webhooks.v1.SubscriptionService/CreateSubscription";
  // Each to a URL of its own: the same subscription twice would be refused as a duplicate.
  const request = (via: string) =>
    toBinary(
      CreateSubscriptionRequestSchema,
      create(CreateSubscriptionRequestSchema, { event: "Order.Shipped", url: `${receiver.url}?via=${via}`, description: "d".repeat(1000) }),
    );
  const accepted = await grpcOverHttp2(running.service.port, path, encodeEnvelope(0, request("gzip")), {
    authorization: `Bearer ${API_KEY}`,
    "grpc-accept-encoding": "gzip",
  });
  t.is(accepted.trailers["grpc-status"], "0");
  t.is(accepted.headers["grpc-encoding"], "gzip");
  t.is(accepted.body[0], 1, "the envelope is marked compressed");
  const answer = fromBinary(CreateSubscriptionResponseSchema, gunzipSync(accepted.body.subarray(5)));
  t.is(answer.subscription?.description.length, 1000);

  const plain = await grpcOverHttp2(running.service.port, path, encodeEnvelope(0, request("plain")), {
    authorization: `Bearer ${API_KEY}`,
  });
  t.is(plain.trailers["grpc-status"], "0");
  t.is(plain.body[0], 0, "nothing accepted, nothing compressed");

  const refused = await grpcOverHttp2(running.service.port, path, encodeEnvelope(0, request("refused")), {
    authorization: "Bearer wrong-key",
  });
  t.is(refused.trailers["grpc-status"] ?? refused.headers["grpc-status"], String(grpc.status.UNAUTHENTICATED));
  t.is(refused.body.byteLength, 0);
});

const transports = {
  "Connect (JSON, HTTP/1.1)": () =>
    createConnectTransport({ baseUrl: `http://127.0.0.1:${running.service.port}`, httpVersion: "1.1", useBinaryFormat: false }),
  "Connect (binary, HTTP/2)": () =>
    createConnectTransport({ baseUrl: `http://127.0.0.1:${running.service.port}`, httpVersion: "2", useBinaryFormat: true }),
  "gRPC-Web (HTTP/1.1)": () => createGrpcWebTransport({ baseUrl: `http://127.0.0.1:${running.service.port}`, httpVersion: "1.1" }),
  "gRPC (connect-node, HTTP/2)": () => createGrpcTransport({ baseUrl: `http://127.0.0.1:${running.service.port}` }),
};

for (const [name, makeTransport] of Object.entries(transports)) {
  test(`${name}: the whole flow on the same port`, async (t) => {
    const client: Client<typeof SubscriptionService> = createClient(SubscriptionService, makeTransport());
    const { events } = await client.listEvents({}, { headers: auth });
    t.true(events.length > 0);
    // A URL of its own: the same subscription twice would be refused as a duplicate.
    const url = `${receiver.url}?via=${encodeURIComponent(name)}`;
    const { subscription } = await client.createSubscription({ event: "Customer.Created", url, description: name }, { headers: auth });
    t.is(subscription?.description, name);
    const { jobId } = await client.triggerSampleEventNotification({ event: "Customer.Created", url }, { headers: auth });
    t.regex(jobId, /^ntf_/);
    const error = await t.throwsAsync(client.listEvents({}, { headers: { authorization: "Bearer wrong-key" } }));
    t.is(ConnectError.from(error).code, Code.Unauthenticated);
    const unknown = ConnectError.from(
      await t.throwsAsync(client.createSubscription({ event: "No.Such", url: receiver.url }, { headers: auth })),
    );
    t.is(unknown.code, Code.InvalidArgument);
    t.is(unknown.rawMessage, UNKNOWN_EVENT);
  });
}
