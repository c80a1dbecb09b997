import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EventCatalog, EventType } from "../domain/event-catalog.js";
import type { Subscription } from "../domain/model.js";
import type { Notifications } from "../domain/notifications.js";
import type { Subscriptions } from "../domain/subscriptions.js";
import {
  type EventType as EventTypeMessage,
  EventTypeSchema,
  type Subscription as SubscriptionMessage,
  SubscriptionSchema,
} from "../gen/webhooks/v1/subscription_pb.js";
import type { SubscriptionService } from "../gen/webhooks/v1/subscription_service_pb.js";
import { requireClient } from "./interceptors.js";

export function toSubscriptionMessage(s: Subscription): SubscriptionMessage {
  return create(SubscriptionSchema, {
    id: s.id,
    event: s.event,
    url: s.url,
    description: s.description,
    signatureKey: s.publicKeyPem,
    enabled: s.enabled,
    createdAt: timestampFromDate(s.createdAt),
    updatedAt: timestampFromDate(s.updatedAt),
  });
}

export function toEventTypeMessage(type: EventType): EventTypeMessage {
  return create(EventTypeSchema, { name: type.name, description: type.description, samplePayload: type.samplePayload });
}

export function createSubscriptionService(deps: {
  catalog: EventCatalog;
  subscriptions: Subscriptions;
  notifications: Notifications;
}): ServiceImpl<typeof SubscriptionService> {
  return {
    listEvents() {
      return { events: deps.catalog.list().map(toEventTypeMessage) };
    },

    async createSubscription(req, context) {
      const client = requireClient(context.values);
      const subscription = await deps.subscriptions.create(client.id, {
        event: req.event,
        url: req.url,
        description: req.description,
      });
      return { subscription: toSubscriptionMessage(subscription) };
    },

    async triggerSampleEventNotification(req, context) {
      const client = requireClient(context.values);
      return { jobId: await deps.notifications.triggerSample(client.id, req.event, req.url) };
    },
  };
}
