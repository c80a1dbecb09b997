import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ClientAccess } from "../../domain/client-access.js";
import { type DeliveryStats, statsRangeOf } from "../../domain/delivery-stats.js";
import type { DeliveryWatches } from "../../domain/delivery-watch.js";
import { ValidationError } from "../../domain/errors.js";
import type { Notifications } from "../../domain/notifications.js";
import type { RelayAnswers } from "../../domain/relay.js";
import { type DeliveryService, NotificationStatus } from "../../gen/webhooks/v1/delivery_service_pb.js";
import { apiKeyIdKey, requireClient } from "../interceptors/auth.js";
import { statusFromMessage, toNotificationMessage } from "./messages.js";
import { toDeliveryStatsMessage } from "./stats-messages.js";
import { streamWatch, watchRequestOf, whileKeyHolds } from "./watch-stream.js";

export function createDeliveryService(deps: {
  notifications: Notifications;
  watches: DeliveryWatches;
  relayAnswers: RelayAnswers;
  access: ClientAccess;
  stats: DeliveryStats;
}): ServiceImpl<typeof DeliveryService> {
  const { notifications } = deps;
  return {
    async getClientDeliveryStats(req, context) {
      const report = await deps.stats.ownReport(statsRangeOf(req.range), requireClient(context.values).id);
      return { stats: toDeliveryStatsMessage(report) };
    },

    async listNotifications(req, context) {
      const status = req.status === NotificationStatus.UNSPECIFIED ? undefined : statusFromMessage(req.status);
      const page = await notifications.list(requireClient(context.values).id, req.subscriptionId, {
        ...(status ? { status } : {}),
        ...(req.event ? { event: req.event } : {}),
        ...(req.since ? { since: timestampDate(req.since) } : {}),
        ...(req.until ? { until: timestampDate(req.until) } : {}),
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { notifications: page.items.map((n) => toNotificationMessage(n)), nextPageToken: page.nextPageToken };
    },

    async getNotification(req, context) {
      const { notification, attempts } = await notifications.get(requireClient(context.values).id, req.subscriptionId, req.id);
      return { notification: toNotificationMessage(notification, attempts) };
    },

    async redeliverNotification(req, context) {
      return { jobId: await notifications.redeliver(requireClient(context.values).id, req.subscriptionId, req.id) };
    },

    async recoverFailedNotifications(req, context) {
      if (!req.since) throw new ValidationError("since is required: the time from which failed notifications are sent again", "since");
      return { jobIds: await notifications.recover(requireClient(context.values).id, req.subscriptionId, timestampDate(req.since)) };
    },

    async reportRelayResult(req, context) {
      const accepted = await deps.relayAnswers.report(requireClient(context.values).id, {
        subscriptionId: req.subscriptionId,
        jobId: req.jobId,
        attempt: req.attempt,
        durationMs: Math.max(0, req.durationMs),
        ...(req.statusCode ? { statusCode: req.statusCode, responseBody: req.responseBody } : {}),
        ...(req.error ? { error: req.error } : {}),
      });
      return { accepted };
    },

    watchDeliveries(req, context) {
      const client = requireClient(context.values);
      const keyWatch = deps.access.watchKey(context.values.get(apiKeyIdKey) ?? "", client.id);
      return whileKeyHolds(keyWatch, (signal) =>
        streamWatch(deps.watches, watchRequestOf(client.id, req), AbortSignal.any([context.signal, signal])),
      );
    },
  };
}
