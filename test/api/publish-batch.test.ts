import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type * as grpc from "@grpc/grpc-js";
import { status as grpcStatus } from "@grpc/grpc-js";
import test from "ava";
import { EventService, PublishEventsRequestSchema, PublishEventsResponseSchema } from "../../src/gen/webhooks/v1/event_service_pb.js";
import { adminAuth, createClient as createTenant } from "../helpers/admin.js";
import { grpcCall } from "../helpers/grpc.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, rest, sharedService, startTestService } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";

const BATCH = "/api/internal/events/publishBatch";
const order = (n: number) => ({ OrderId: `ord_${n}`, CustomerId: "cus_1", TotalAmount: n, Currency: "EUR" });

const connectClient = (baseUrl: string) =>
  createClient(
    EventService,
    createConnectTransport({
      baseUrl,
      httpVersion: "1.1",
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${ADMIN_TOKEN}`);
          return next(req);
        },
      ],
    }),
  );

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: PublishEvents over REST, gRPC and Connect accepts each event once per key, answers in order, and delivers each`,
    async (t) => {
      const store = await target.create();
      const { service, baseUrl } = await startTestService(store.env);
      const receiver = await Receiver.start();
      t.teardown(async () => {
        await service.stop();
        await receiver.close();
        await store.cleanup();
      });
      const tenant = await createTenant(baseUrl, "Batch publisher");
      for (const event of ["Order.Created", "Order.Shipped"]) {
        const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event, url: receiver.url }, tenant.auth);
        t.is(created.status, 200, created.text);
      }
      const events = [
        { clientId: tenant.id, event: "Order.Created", payload: order(1), idempotencyKey: "created-1" },
        { clientId: tenant.id, event: "Order.Shipped", payload: order(1) },
        { clientId: tenant.id, event: "Order.Created", payload: order(2), idempotencyKey: "created-2" },
      ];
      const first = await rest(baseUrl, "POST", BATCH, { events }, adminAuth);
      t.is(first.status, 200, first.text);
      const results = first.json.results as Array<{ jobIds: string[]; duplicate?: boolean }>;
      t.is(results.length, 3);
      for (const result of results) t.is(result.jobIds.length, 1, "one subscription per event");
      t.false(
        results.some((result) => result.duplicate),
        first.text,
      );

      const again = await rest(baseUrl, "POST", BATCH, { events }, adminAuth);
      t.is(again.status, 200, again.text);
      const replayed = again.json.results as Array<{ jobIds: string[]; duplicate?: boolean }>;
      t.deepEqual(replayed[0], { ...results[0], duplicate: true }, "a repeated key answers its first ids");
      t.deepEqual(replayed[2], { ...results[2], duplicate: true });
      t.notDeepEqual(replayed[1]?.jobIds, results[1]?.jobIds, "an event without a key is published again");

      const overGrpc = await grpcCall(
        service.port,
        EventService,
        "PublishEvents",
        PublishEventsRequestSchema,
        PublishEventsResponseSchema,
        {
          events: [
            { clientId: tenant.id, event: "Order.Created", payload: order(1), idempotencyKey: "created-1" },
            { clientId: tenant.id, event: "Order.Created", payload: order(3), idempotencyKey: "created-3" },
          ],
        },
        ADMIN_TOKEN,
      );
      t.deepEqual(overGrpc.results[0]?.jobIds, results[0]?.jobIds);
      t.true(overGrpc.results[0]?.duplicate);
      t.false(overGrpc.results[1]?.duplicate);

      const overConnect = await connectClient(baseUrl).publishEvents({
        events: [{ clientId: tenant.id, event: "Order.Shipped", payload: order(4), idempotencyKey: "shipped-4" }],
      });
      t.is(overConnect.results.length, 1);
      t.false(overConnect.results[0]?.duplicate);

      const published = [
        ...results.flatMap((result) => result.jobIds),
        replayed[1]?.jobIds ?? [],
        overGrpc.results[1]?.jobIds ?? [],
        overConnect.results[0]?.jobIds ?? [],
      ].flat();
      const received = await receiver.waitFor(published.length);
      t.deepEqual(received.map((request) => request.headers["x-jobid"]).sort(), [...published].sort(), "each accepted job delivered once");
    },
  );
}

const running = sharedService(test);

test("a batch over the limit, empty, or with a refused event is refused whole, naming the limit or the event's index", async (t) => {
  const tenant = await createTenant(running.baseUrl, "Refused batches");
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const created = await rest(
    running.baseUrl,
    "POST",
    "/api/webhookSubscription",
    { event: "Order.Created", url: receiver.url },
    tenant.auth,
  );
  t.is(created.status, 200, created.text);
  const event = (n: number, key?: string) => ({
    clientId: tenant.id,
    event: "Order.Created",
    payload: order(n),
    ...(key ? { idempotencyKey: key } : {}),
  });

  const tooMany = await rest(running.baseUrl, "POST", BATCH, { events: Array.from({ length: 501 }, (_, n) => event(n)) }, adminAuth);
  t.is(tooMany.status, 400, tooMany.text);
  t.is(tooMany.json.code, "invalid_argument");
  t.regex(tooMany.json.message as string, /501 events; at most 500/);
  const overGrpc = await t.throwsAsync(
    grpcCall(
      running.service.port,
      EventService,
      "PublishEvents",
      PublishEventsRequestSchema,
      PublishEventsResponseSchema,
      { events: Array.from({ length: 501 }, (_, n) => event(n)) },
      ADMIN_TOKEN,
    ),
  );
  t.is((overGrpc as grpc.ServiceError).code, grpcStatus.INVALID_ARGUMENT);
  const overConnect = await t.throwsAsync(connectClient(running.baseUrl).publishEvents({ events: [] }));
  t.is(ConnectError.from(overConnect).code, Code.InvalidArgument);
  t.regex(ConnectError.from(overConnect).rawMessage, /events is empty/);

  const refusals: Array<[string, unknown, number, RegExp]> = [
    ["an unknown event type", { ...event(3), event: "Order.Nope" }, 400, /^events\[2\]: .*Order\.Nope/],
    ["no client", { ...event(3), clientId: "" }, 400, /^events\[2\]: clientId is required/],
    ["an unknown client", { ...event(3), clientId: "cli_00000000000000000000000000000000" }, 404, /^events\[2\]: client .* not found/],
    ["a payload with a base field", { ...event(3), payload: { Event: "x" } }, 400, /^events\[2\]: /],
    ["a key used earlier in the batch", event(3, "first"), 400, /events\[2\] repeats the client and idempotencyKey of events\[0\]/],
  ];
  for (const [what, bad, status, message] of refusals) {
    const refused = await rest(running.baseUrl, "POST", BATCH, { events: [event(1, "first"), event(2), bad] }, adminAuth);
    t.is(refused.status, status, `${what}: ${refused.text}`);
    t.regex(refused.json.message as string, message, what);
  }
  // Nothing of a refused batch was accepted: its key is still free, and no notification went out.
  const alone = await rest(running.baseUrl, "POST", BATCH, { events: [event(1, "first")] }, adminAuth);
  t.is(alone.status, 200, alone.text);
  const [result] = alone.json.results as Array<{ jobIds: string[]; duplicate?: boolean }>;
  t.falsy(result?.duplicate, alone.text);
  const [only] = await receiver.waitFor(1);
  t.is(only?.headers["x-jobid"], result?.jobIds[0]);
  const log = await rest(running.baseUrl, "GET", `/api/webhookSubscription/${created.json.id}/notifications`, undefined, tenant.auth);
  t.is((log.json.notifications as unknown[]).length, 1, log.text);
});
