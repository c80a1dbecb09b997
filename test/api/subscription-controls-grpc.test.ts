import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import test from "ava";
import { ClientService } from "../../src/gen/webhooks/v1/client_service_pb.js";
import { EventService } from "../../src/gen/webhooks/v1/event_service_pb.js";
import { SubscriptionService } from "../../src/gen/webhooks/v1/subscription_service_pb.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, sharedService } from "../helpers/service.js";

// Custom headers and payload filters over the gRPC protocol (HTTP/2): a map and Structs.

const running = sharedService(test);

test("headers (a map, then a Struct on update) and a filter (a Struct) over gRPC", async (t) => {
  const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${running.service.port}` });
  const [subscriptions, events, admin] = [
    createClient(SubscriptionService, transport),
    createClient(EventService, transport),
    createClient(ClientService, transport),
  ];
  const asAdmin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const { client, apiKey } = await admin.createClient({ name: "gRPC controls" }, asAdmin);
  const asClient = { headers: { authorization: `Bearer ${apiKey?.key}` } };
  await events.registerEventType({ name: "Invoice.Paid", description: "paid", samplePayload: { Amount: 1 } }, asAdmin);

  const { subscription } = await subscriptions.createSubscription(
    { event: "Invoice.Paid", url: receiver.url, headers: { "X-Api-Key": "grpc-secret" }, filter: { Amount: { $gte: 10 } } },
    asClient,
  );
  t.deepEqual(subscription?.headers, { "X-Api-Key": "grpc-secret" });
  t.deepEqual(subscription?.filter, { Amount: { $gte: 10 } });
  const id = subscription?.id as string;
  t.deepEqual((await subscriptions.getSubscription({ id }, asClient)).subscription?.headers, { "X-Api-Key": "••••" });

  const publish = async (amount: number) =>
    (await events.publishEvent({ clientId: client?.id as string, event: "Invoice.Paid", payload: { Amount: amount } }, asAdmin)).jobIds;
  t.deepEqual(await publish(5), [], "filtered out: no job");
  const [jobId] = await publish(50);
  const delivered = await receiver.waitForJob(jobId as string);
  t.is(delivered.headers["x-api-key"], "grpc-secret");

  const updated = await subscriptions.updateSubscription({ id, headers: { "X-Other": "2" }, filter: {} }, asClient);
  t.deepEqual(updated.subscription?.headers, { "X-Other": "••••" });
  t.is(updated.subscription?.filter, undefined);
  const refused = await t.throwsAsync(subscriptions.updateSubscription({ id, filter: { Amount: { $between: [1, 2] } } }, asClient));
  t.is(ConnectError.from(refused).code, Code.InvalidArgument);
  t.regex(ConnectError.from(refused).rawMessage, /^filter\.Amount: unknown operator \$between$/);
});
