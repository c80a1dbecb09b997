import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import test from "ava";
import { verifyBody } from "../../src/domain/signature.js";
import { ClientService } from "../../src/gen/webhooks/v1/client_service_pb.js";
import { DeliveryService, NotificationStatus } from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { EventService } from "../../src/gen/webhooks/v1/event_service_pb.js";
import { SubscriptionService } from "../../src/gen/webhooks/v1/subscription_service_pb.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, sharedService } from "../helpers/service.js";

// The subscriber and internal APIs over the gRPC protocol (HTTP/2), RPC by RPC.

const running = sharedService(test, { AUTO_DISABLE_AFTER: "off" });

function clients(): {
  subscriptions: Client<typeof SubscriptionService>;
  deliveries: Client<typeof DeliveryService>;
  events: Client<typeof EventService>;
  admin: Client<typeof ClientService>;
} {
  const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${running.service.port}` });
  return {
    subscriptions: createClient(SubscriptionService, transport),
    deliveries: createClient(DeliveryService, transport),
    events: createClient(EventService, transport),
    admin: createClient(ClientService, transport),
  };
}

test("every subscriber and internal RPC over gRPC", async (t) => {
  const { subscriptions, deliveries, events, admin } = clients();
  const asAdmin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
  const receiver = await Receiver.start(() => ({ status: 503 }));
  t.teardown(() => receiver.close());

  const { client, apiKey } = await admin.createClient({ name: "gRPC everything" }, asAdmin);
  const asClient = { headers: { authorization: `Bearer ${apiKey?.key}` } };
  t.true((await admin.listClients({}, asAdmin)).clients.some((c) => c.id === client?.id));
  const extra = await admin.createApiKey({ clientId: client?.id as string }, asAdmin);
  await admin.revokeApiKey({ clientId: client?.id as string, keyId: extra.apiKey?.id as string }, asAdmin);
  const revoked = await t.throwsAsync(subscriptions.listEvents({}, { headers: { authorization: `Bearer ${extra.apiKey?.key}` } }));
  t.is(ConnectError.from(revoked).code, Code.Unauthenticated);

  await events.registerEventType({ name: "Shipment.Delayed", description: "late", samplePayload: { ShipmentId: "s" } }, asAdmin);
  const updated = await events.updateEventType({ name: "Shipment.Delayed", description: "A shipment is late." }, asAdmin);
  t.is(updated.eventType?.description, "A shipment is late.");
  t.true((await events.listEventTypes({}, asAdmin)).eventTypes.some((e) => e.name === "Shipment.Delayed"));

  const { subscription } = await subscriptions.createSubscription({ event: "Shipment.Delayed", url: receiver.url }, asClient);
  const id = subscription?.id as string;
  t.is((await subscriptions.getSubscription({ id }, asClient)).subscription?.id, id);
  t.deepEqual(
    (await subscriptions.listSubscriptions({ pageSize: 10 }, asClient)).subscriptions.map((s) => s.id),
    [id],
  );
  const moved = await subscriptions.updateSubscription({ id, description: "via gRPC", url: `${receiver.url}?grpc` }, asClient);
  t.is(moved.subscription?.description, "via gRPC");

  const rotating = await subscriptions.rotateSignatureKey({ id }, asClient);
  const newKey = rotating.subscription?.nextSignatureKey as string;
  const confirmed = await subscriptions.confirmSignatureKeyRotation({ id }, asClient);
  t.is(confirmed.subscription?.signatureKey, newKey);

  const published = await events.publishEvent(
    { clientId: client?.id as string, event: "Shipment.Delayed", payload: { ShipmentId: "s1" } },
    asAdmin,
  );
  const jobId = published.jobIds[0] as string;
  const attempts = await receiver.waitFor(6);
  t.true(attempts.every((a) => verifyBody(a.body, a.headers["x-signature"] as string, newKey)));
  await new Promise((resolve) => setTimeout(resolve, 500));

  const failed = await deliveries.listNotifications({ subscriptionId: id, status: NotificationStatus.FAILED }, asClient);
  t.deepEqual(
    failed.notifications.map((n) => n.id),
    [jobId],
  );
  const { notification } = await deliveries.getNotification({ subscriptionId: id, id: jobId }, asClient);
  t.deepEqual(
    notification?.attempts.map((a) => [a.attempt, a.statusCode]),
    [0, 1, 2, 3, 4, 5].map((n) => [n, 503]),
  );

  receiver.respond = () => ({ status: 200 });
  const again = await deliveries.redeliverNotification({ subscriptionId: id, id: jobId }, asClient);
  t.not(again.jobId, jobId);
  const recovered = await deliveries.recoverFailedNotifications(
    { subscriptionId: id, since: timestampFromDate(new Date(Date.now() - 60_000)) },
    asClient,
  );
  t.is(recovered.jobIds.length, 1);
  const after = await receiver.waitFor(8);
  t.deepEqual(
    [...new Set(after.slice(6).map((r) => r.headers["x-jobid"]))].sort(),
    [...new Set([again.jobId, recovered.jobIds[0]])].sort(),
  );

  await subscriptions.deleteSubscription({ id }, asClient);
  const gone = await t.throwsAsync(subscriptions.getSubscription({ id }, asClient));
  t.is(ConnectError.from(gone).code, Code.NotFound);
});
