import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import { EventService, PublishEventRequestSchema, PublishEventResponseSchema } from "../../src/gen/webhooks/v1/event_service_pb.js";
import { adminAuth, createClient as createTenant } from "../helpers/admin.js";
import { grpcCall } from "../helpers/grpc.js";
import { ADMIN_TOKEN, rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const PUBLISH = "/api/internal/events/publish";
const PAYLOAD = { OrderId: "ord_1", CustomerId: "cus_1", TotalAmount: 1, Currency: "EUR" };

const connectClient = (useBinaryFormat = false) =>
  createClient(
    EventService,
    createConnectTransport({
      baseUrl: running.baseUrl,
      httpVersion: "1.1",
      useBinaryFormat,
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${ADMIN_TOKEN}`);
          return next(req);
        },
      ],
    }),
  );

/** PublishEvent over binary gRPC (@grpc/grpc-js), with the admin token. */
const publishOverGrpc = (request: MessageInitShape<typeof PublishEventRequestSchema>) =>
  grpcCall(running.service.port, EventService, "PublishEvent", PublishEventRequestSchema, PublishEventResponseSchema, request, ADMIN_TOKEN);

for (const clientId of ["cli_…", "cli_00000000000000000000000000000000"]) {
  test(`publishing for a client that does not exist (${clientId}) is not found, naming it, on every protocol`, async (t) => {
    const answer = await rest(running.baseUrl, "POST", PUBLISH, { clientId, event: "Order.Created", payload: PAYLOAD }, adminAuth);
    t.is(answer.status, 404, answer.text);
    t.is(answer.json.code, "not_found");
    t.true(String(answer.json.message).includes(clientId), answer.text);

    const connect = await t.throwsAsync(connectClient().publishEvent({ clientId, event: "Order.Created", payload: PAYLOAD }));
    t.is(ConnectError.from(connect).code, Code.NotFound);
    t.true(ConnectError.from(connect).rawMessage.includes(clientId));

    const overGrpc = await t.throwsAsync(publishOverGrpc({ clientId, event: "Order.Created", payload: PAYLOAD }));
    t.is((overGrpc as grpc.ServiceError).code, grpc.status.NOT_FOUND);
  });
}

test("publishing for a client that exists but subscribes to nothing answers no jobs", async (t) => {
  const tenant = await createTenant(running.baseUrl, "Nobody listens");
  const answer = await rest(running.baseUrl, "POST", PUBLISH, { clientId: tenant.id, event: "Order.Created", payload: PAYLOAD }, adminAuth);
  t.is(answer.status, 200, answer.text);
  t.deepEqual(answer.json, { jobIds: [], duplicate: false });
});

for (const [name, idempotencyKey, message] of [
  ["a NUL", "order-\u0000-42", /idempotencyKey contains control characters/],
  ["a newline", "order\n42", /idempotencyKey contains control characters/],
  ["256 characters", "k".repeat(256), /idempotencyKey is longer than 255 characters/],
] as const) {
  test(`an idempotency key with ${name} is invalid_argument over REST and Connect, not internal`, async (t) => {
    const tenant = await createTenant(running.baseUrl, `Keys ${name}`);
    const request = { clientId: tenant.id, event: "Order.Created", payload: PAYLOAD, idempotencyKey };
    const answer = await rest(running.baseUrl, "POST", PUBLISH, request, adminAuth);
    t.is(answer.status, 400, answer.text);
    t.is(answer.json.code, "invalid_argument");
    t.regex(String(answer.json.message), message);

    const connect = await t.throwsAsync(connectClient().publishEvent(request));
    t.is(ConnectError.from(connect).code, Code.InvalidArgument);
    t.regex(ConnectError.from(connect).rawMessage, message);
  });
}

test("an idempotency key of 255 printable characters, non-ASCII ones included, is taken", async (t) => {
  const tenant = await createTenant(running.baseUrl, "Long keys");
  const idempotencyKey = `bestellung-ü-${"k".repeat(242)}`;
  t.is(idempotencyKey.length, 255);
  const request = { clientId: tenant.id, event: "Order.Created", payload: PAYLOAD, idempotencyKey };
  const first = await rest(running.baseUrl, "POST", PUBLISH, request, adminAuth);
  t.is(first.status, 200, first.text);
  const again = await rest(running.baseUrl, "POST", PUBLISH, request, adminAuth);
  t.is(again.json.duplicate, true, again.text);
});

test("an idempotency key is counted in characters: 255 emoji are taken, 256 are too long", async (t) => {
  const tenant = await createTenant(running.baseUrl, "Emoji keys");
  const publish = (idempotencyKey: string) =>
    rest(running.baseUrl, "POST", PUBLISH, { clientId: tenant.id, event: "Order.Created", payload: PAYLOAD, idempotencyKey }, adminAuth);
  const taken = await publish("🔑".repeat(255));
  t.is(taken.status, 200, taken.text);
  const tooLong = await publish("🔑".repeat(256));
  t.is(tooLong.status, 400, tooLong.text);
  t.regex(String(tooLong.json.message), /idempotencyKey is longer than 255 characters/);
});

test("a payload number JSON cannot carry is invalid_argument naming its field, over REST, Connect and gRPC", async (t) => {
  const tenant = await createTenant(running.baseUrl, "Out of range");
  // JSON.parse reads 1e400 as Infinity, which JSON.stringify would deliver as null.
  const answer = await rest(
    running.baseUrl,
    "POST",
    PUBLISH,
    `{"clientId":"${tenant.id}","event":"Order.Shipped","payload":{"OrderId":"o","Weight":1e400}}`,
    adminAuth,
  );
  t.is(answer.status, 400, answer.text);
  t.is(answer.json.code, "invalid_argument");
  t.regex(String(answer.json.message), /field "Weight" is Infinity.*finite/);

  for (const value of [Number.NaN, Number.NEGATIVE_INFINITY]) {
    const request = { clientId: tenant.id, event: "Order.Shipped", payload: { OrderId: "o", Lines: [1, value] } };
    const overGrpc = await t.throwsAsync(publishOverGrpc(request));
    t.is((overGrpc as grpc.ServiceError).code, grpc.status.INVALID_ARGUMENT);
    t.regex((overGrpc as grpc.ServiceError).details, /item 1 is (NaN|-Infinity).*finite/);
  }
  // Connect's JSON has no Infinity either (its client refuses to encode one): binary Connect carries it.
  const connect = await t.throwsAsync(
    connectClient(true).publishEvent({
      clientId: tenant.id,
      event: "Order.Shipped",
      payload: { OrderId: "o", Weight: Number.POSITIVE_INFINITY },
    }),
  );
  t.is(ConnectError.from(connect).code, Code.InvalidArgument);
  t.regex(ConnectError.from(connect).rawMessage, /field "Weight" is Infinity/);
});

test("a payload that is no JSON object is invalid_argument naming the field, over REST and Connect", async (t) => {
  const tenant = await createTenant(running.baseUrl, "Not an object");
  const single = await rest(running.baseUrl, "POST", PUBLISH, { clientId: tenant.id, event: "Order.Shipped", payload: [1, 2] }, adminAuth);
  t.is(single.status, 400, single.text);
  t.is(single.json.code, "invalid_argument");
  t.is(single.json.message, "payload must be a JSON object, not an array");

  const events = [
    { clientId: tenant.id, event: "Order.Shipped", payload: { OrderId: "o" } },
    { clientId: tenant.id, event: "Order.Shipped", payload: "shipped" },
  ];
  const batch = await rest(running.baseUrl, "POST", "/api/internal/events/publishBatch", { events }, adminAuth);
  t.is(batch.status, 400, batch.text);
  t.is(batch.json.message, 'events[1].payload must be a JSON object, not "shipped"');

  const connect = await fetch(`${running.baseUrl}/webhooks.v1.EventService/PublishEvent`, {
    method: "POST",
    headers: { ...adminAuth, "content-type": "application/json" },
    body: JSON.stringify({ clientId: tenant.id, event: "Order.Shipped", payload: 5 }),
  });
  const answer = (await connect.json()) as { code: string; message: string };
  t.is(connect.status, 400);
  t.deepEqual(answer, { code: "invalid_argument", message: "payload must be a JSON object, not 5" });
});
