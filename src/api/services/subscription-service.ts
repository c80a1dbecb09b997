import type { ServiceImpl } from "@connectrpc/connect";
import type { EventCatalog } from "../../domain/event-catalog.js";
import type { Subscription } from "../../domain/model.js";
import type { Notifications } from "../../domain/notifications.js";
import type { Subscriptions } from "../../domain/subscriptions.js";
import type { SubscriptionService } from "../../gen/webhooks/v1/subscription_service_pb.js";
import { requireClient } from "../interceptors/auth.js";
import { schemeFromMessage, toEventTypeMessage, toSubscriptionMessage } from "./messages.js";

export function createSubscriptionService(deps: {
  catalog: EventCatalog;
  subscriptions: Subscriptions;
  notifications: Notifications;
}): ServiceImpl<typeof SubscriptionService> {
  const { subscriptions } = deps;
  const view = (subscription: Subscription, headersInTheClear = false) =>
    toSubscriptionMessage(
      subscription,
      subscriptions.signatureKeys(subscription),
      subscriptions.shownHeaders(subscription, headersInTheClear),
    );
  return {
    async listEvents() {
      return { events: (await deps.catalog.list()).map(toEventTypeMessage) };
    },

    async createSubscription(req, context) {
      const client = requireClient(context.values);
      const signatureScheme = schemeFromMessage(req.signatureScheme);
      const subscription = await subscriptions.create(client.id, {
        event: req.event,
        url: req.url,
        description: req.description,
        ...(signatureScheme ? { signatureScheme } : {}),
        relay: req.relay,
        temporary: req.temporary,
        rateLimitPerSecond: req.rateLimitPerSecond,
        headers: req.headers,
        ...(req.filter ? { filter: req.filter } : {}),
      });
      return { subscription: view(subscription, true) };
    },

    async triggerSampleEventNotification(req, context) {
      const client = requireClient(context.values);
      return { jobId: await deps.notifications.triggerSample(client.id, req.event, req.url) };
    },

    async listSubscriptions(req, context) {
      const page = await subscriptions.list(requireClient(context.values).id, req.pageSize, req.pageToken);
      return { subscriptions: page.items.map((subscription) => view(subscription)), nextPageToken: page.nextPageToken };
    },

    async getSubscription(req, context) {
      return { subscription: view(await subscriptions.get(requireClient(context.values).id, req.id)) };
    },

    async updateSubscription(req, context) {
      const updated = await subscriptions.update(requireClient(context.values).id, req.id, {
        ...(req.url === undefined ? {} : { url: req.url }),
        ...(req.description === undefined ? {} : { description: req.description }),
        ...(req.enabled === undefined ? {} : { enabled: req.enabled }),
        ...(req.rateLimitPerSecond === undefined ? {} : { rateLimitPerSecond: req.rateLimitPerSecond }),
        ...(req.headers === undefined ? {} : { headers: req.headers }),
        ...(req.filter === undefined ? {} : { filter: req.filter }),
      });
      return { subscription: view(updated) };
    },

    async deleteSubscription(req, context) {
      await subscriptions.delete(requireClient(context.values).id, req.id);
      return {};
    },

    async rotateSignatureKey(req, context) {
      return { subscription: view(await subscriptions.rotateKey(requireClient(context.values).id, req.id)) };
    },

    async confirmSignatureKeyRotation(req, context) {
      return { subscription: view(await subscriptions.confirmRotation(requireClient(context.values).id, req.id)) };
    },
  };
}
