import * as grpc from "@grpc/grpc-js";
import test from "ava";
import { ClientService, CreateClientRequestSchema, CreateClientResponseSchema } from "../../src/gen/webhooks/v1/client_service_pb.js";
import {
  DeliveryService,
  GetNotificationRequestSchema,
  GetNotificationResponseSchema,
  ListNotificationsRequestSchema,
  ListNotificationsResponseSchema,
  NotificationStatus,
} from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { EventService, PublishEventRequestSchema, PublishEventResponseSchema } from "../../src/gen/webhooks/v1/event_service_pb.js";
import {
  CreateSubscriptionRequestSchema,
  CreateSubscriptionResponseSchema,
  SubscriptionService,
} from "../../src/gen/webhooks/v1/subscription_service_pb.js";
import { grpcCall } from "../helpers/grpc.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, sharedService } from "../helpers/service.js";

const running = sharedService(test);

test("an internal service publishes over gRPC and the subscriber reads the delivery log over gRPC", async (t) => {
  const port = running.service.port;
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());

  const { client, apiKey } = await grpcCall(
    port,
    ClientService,
    "CreateClient",
    CreateClientRequestSchema,
    CreateClientResponseSchema,
    { name: "gRPC Co" },
    ADMIN_TOKEN,
  );
  const clientId = client?.id as string;
  const key = apiKey?.key as string;
  const { subscription } = await grpcCall(
    port,
    SubscriptionService,
    "CreateSubscription",
    CreateSubscriptionRequestSchema,
    CreateSubscriptionResponseSchema,
    { event: "Order.Cancelled", url: receiver.url },
    key,
  );

  const published = await grpcCall(
    port,
    EventService,
    "PublishEvent",
    PublishEventRequestSchema,
    PublishEventResponseSchema,
    { clientId, event: "Order.Cancelled", payload: { OrderId: "ord_9", Reason: "OutOfStock" }, idempotencyKey: "cancel-ord_9" },
    ADMIN_TOKEN,
  );
  t.is(published.jobIds.length, 1);
  const [delivery] = await receiver.waitFor(1);
  t.is(delivery?.headers["x-jobid"], published.jobIds[0]);
  t.like(JSON.parse(delivery?.body ?? "{}"), { Event: "Order.Cancelled", OrderId: "ord_9", Reason: "OutOfStock" });
  await new Promise((resolve) => setTimeout(resolve, 300));

  const log = await grpcCall(
    port,
    DeliveryService,
    "ListNotifications",
    ListNotificationsRequestSchema,
    ListNotificationsResponseSchema,
    { subscriptionId: subscription?.id as string },
    key,
  );
  t.deepEqual(
    log.notifications.map((n) => [n.id, n.status]),
    [[published.jobIds[0], NotificationStatus.DELIVERED]],
  );
  const { notification } = await grpcCall(
    port,
    DeliveryService,
    "GetNotification",
    GetNotificationRequestSchema,
    GetNotificationResponseSchema,
    { subscriptionId: subscription?.id as string, id: published.jobIds[0] as string },
    key,
  );
  t.is(notification?.attempts.length, 1);
  t.is(notification?.attempts[0]?.statusCode, 200);
  t.true(notification?.attempts[0]?.succeeded);
});

test("the internal API refuses a client key and a missing token over gRPC", async (t) => {
  const port = running.service.port;
  const error = await t.throwsAsync(
    grpcCall(
      port,
      EventService,
      "PublishEvent",
      PublishEventRequestSchema,
      PublishEventResponseSchema,
      { clientId: "x", event: "Order.Created" },
      "test-key-0123456789abcdef",
    ),
  );
  t.is((error as grpc.ServiceError).code, grpc.status.UNAUTHENTICATED);
});
