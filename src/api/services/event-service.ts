import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { type DeliveryStats, statsRangeOf } from "../../domain/delivery-stats.js";
import type { DeliveryWatches } from "../../domain/delivery-watch.js";
import { ValidationError } from "../../domain/errors.js";
import type { EventCatalog } from "../../domain/event-catalog.js";
import type { Notifications, PublishInput } from "../../domain/notifications.js";
import type { EventService, PublishEventRequest } from "../../gen/webhooks/v1/event_service_pb.js";
import type { RecentDeliveries } from "../../observability/recent-deliveries.js";
import { toEventTypeMessage, toNotificationMessage } from "./messages.js";
import { toDeliveryStatsMessage } from "./stats-messages.js";
import { streamWatch, watchRequestOf } from "./watch-stream.js";

/** The delivery queue's counts, every instance's jobs (what the webhook_queue_* gauges read). */
export interface JobCountsSource {
  counts(): Promise<{ due: number; scheduled: number; locked: number }>;
}

function publishInputOf(req: PublishEventRequest): PublishInput {
  if (req.clientId === "") throw new ValidationError("clientId is required: the client whose subscriptions receive the event", "clientId");
  return {
    clientId: req.clientId,
    event: req.event,
    payload: req.payload ?? {},
    ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
  };
}

export function createEventService(deps: {
  catalog: EventCatalog;
  notifications: Notifications;
  watches: DeliveryWatches;
  recentDeliveries: RecentDeliveries;
  jobQueue: JobCountsSource;
  stats: DeliveryStats;
}): ServiceImpl<typeof EventService> {
  return {
    async getDeliveryStats(req) {
      const report = await deps.stats.report(statsRangeOf(req.range), req.clientId === "" ? undefined : req.clientId);
      return { stats: toDeliveryStatsMessage(report) };
    },

    async publishEvent(req) {
      const { ids, duplicate } = await deps.notifications.publish(publishInputOf(req));
      return { jobIds: ids, duplicate };
    },

    async publishEvents(req) {
      const answers = await deps.notifications.publishMany(
        req.events.map((event, index) => {
          try {
            return publishInputOf(event);
          } catch (error) {
            if (error instanceof ValidationError) error.message = `events[${index}]: ${error.message}`;
            throw error;
          }
        }),
      );
      return { results: answers.map(({ ids, duplicate }) => ({ jobIds: ids, duplicate })) };
    },

    async registerEventType(req) {
      const type = await deps.catalog.register({
        name: req.name,
        description: req.description,
        samplePayload: req.samplePayload ?? {},
        ...(req.jsonSchema ? { jsonSchema: req.jsonSchema } : {}),
      });
      return { eventType: toEventTypeMessage(type) };
    },

    async updateEventType(req) {
      if (req.clearJsonSchema && req.jsonSchema) throw new ValidationError("send jsonSchema or clearJsonSchema, not both", "jsonSchema");
      const type = await deps.catalog.update(req.name, {
        ...(req.description === undefined ? {} : { description: req.description }),
        ...(req.samplePayload ? { samplePayload: req.samplePayload } : {}),
        ...(req.jsonSchema ? { jsonSchema: req.jsonSchema } : req.clearJsonSchema ? { jsonSchema: null } : {}),
      });
      return { eventType: toEventTypeMessage(type) };
    },

    async listEventTypes() {
      return { eventTypes: (await deps.catalog.list()).map(toEventTypeMessage) };
    },

    async getJob(req) {
      const { notification, attempts, subscriptionDeleted } = await deps.notifications.getJob(req.jobId);
      return {
        notification: toNotificationMessage(notification, attempts),
        clientId: notification.clientId,
        subscriptionDeleted,
      };
    },

    async getDeliveryDashboard() {
      const counts = await deps.jobQueue.counts();
      const recent = deps.recentDeliveries.summary();
      return {
        since: timestampFromDate(recent.since),
        delivered: recent.delivered,
        failed: recent.failed,
        failedAttempts: recent.failedAttempts,
        pending: counts.due + counts.scheduled + counts.locked,
        slowestEndpoints: recent.slowestEndpoints,
        disabledSubscriptions: recent.disabled.map((disabled) => ({
          subscriptionId: disabled.subscriptionId,
          clientId: disabled.clientId,
          event: disabled.event,
          url: disabled.url,
          reason: disabled.reason,
          disabledAt: timestampFromDate(disabled.at),
        })),
      };
    },

    watchAllDeliveries(req, context) {
      return streamWatch(deps.watches, watchRequestOf(req.clientId || undefined, req), context.signal);
    },
  };
}
