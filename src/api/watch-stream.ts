import { create } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ActivityKind, DeliveryActivity, Outcome } from "../domain/delivery-activity.js";
import type { DeliveryWatches, WatchRequest } from "../domain/delivery-watch.js";
import {
  DeliveryActivityKind,
  type DeliveryActivity as DeliveryActivityMessage,
  DeliveryActivitySchema,
  DeliveryOutcome,
  NotificationStatus,
} from "../gen/webhooks/v1/delivery_service_pb.js";

/** With nothing to send for this long, a stream sends a message without activity, so that idle proxies keep it open. */
export const KEEP_ALIVE_MS = 15_000;

const KIND_TO_MESSAGE: Record<ActivityKind, DeliveryActivityKind> = {
  accepted: DeliveryActivityKind.ACCEPTED,
  "attempt-started": DeliveryActivityKind.ATTEMPT_STARTED,
  "attempt-finished": DeliveryActivityKind.ATTEMPT_FINISHED,
  delivered: DeliveryActivityKind.DELIVERED,
  failed: DeliveryActivityKind.FAILED,
  "subscription-disabled": DeliveryActivityKind.SUBSCRIPTION_DISABLED,
  "relay-request": DeliveryActivityKind.RELAY_REQUEST,
};

const STATUS_TO_MESSAGE = {
  pending: NotificationStatus.PENDING,
  delivered: NotificationStatus.DELIVERED,
  failed: NotificationStatus.FAILED,
} as const;

export function toActivityMessage(activity: DeliveryActivity): DeliveryActivityMessage {
  return create(DeliveryActivitySchema, {
    kind: KIND_TO_MESSAGE[activity.kind],
    occurredAt: timestampFromDate(activity.at),
    jobId: activity.jobId,
    subscriptionId: activity.subscriptionId,
    clientId: activity.clientId,
    event: activity.event,
    attempt: activity.attempt ?? 0,
    statusCode: activity.statusCode ?? 0,
    durationMs: activity.durationMs ?? 0,
    error: activity.error ?? "",
    succeeded: activity.succeeded ?? false,
    status: activity.status ? STATUS_TO_MESSAGE[activity.status] : NotificationStatus.UNSPECIFIED,
    reason: activity.reason ?? "",
    replayed: activity.replayed ?? false,
    body: activity.body ?? "",
    headers: activity.headers ?? {},
  });
}

/** The filter fields both watch requests share, as the domain takes them. */
export function watchRequestOf(
  clientId: string | undefined,
  req: { subscriptionId: string; event: string; outcome: DeliveryOutcome; since?: Timestamp | undefined; relaySubscriptionIds?: string[] },
): WatchRequest {
  const outcome: Outcome | undefined =
    req.outcome === DeliveryOutcome.SUCCEEDED ? "succeeded" : req.outcome === DeliveryOutcome.FAILED ? "failed" : undefined;
  return {
    ...(clientId !== undefined ? { clientId } : {}),
    ...(req.subscriptionId ? { subscriptionId: req.subscriptionId } : {}),
    ...(req.event ? { event: req.event } : {}),
    ...(outcome ? { outcome } : {}),
    ...(req.since ? { since: timestampDate(req.since) } : {}),
    ...(req.relaySubscriptionIds?.length ? { relaySubscriptionIds: req.relaySubscriptionIds } : {}),
  };
}

/**
 * The stream of one watch: the replay, one message without activity (the
 * watch is in place), then live activities, with a keep-alive after each
 * KEEP_ALIVE_MS of silence. Ends when the client goes away (`signal`) or
 * the service stops; a watcher that fell behind ends with its error.
 */
export async function* streamWatch(
  watches: DeliveryWatches,
  request: WatchRequest,
  signal: AbortSignal,
): AsyncGenerator<{ activity?: DeliveryActivityMessage }> {
  const watch = await watches.open(request);
  const close = () => watch.close();
  signal.addEventListener("abort", close, { once: true });
  let keepAlive: NodeJS.Timeout | undefined;
  try {
    for (const activity of watch.replay) yield { activity: toActivityMessage(activity) };
    yield {};
    for (;;) {
      const quiet = await Promise.race([
        watch.waitForActivity().then(() => false),
        new Promise<boolean>((resolve) => {
          keepAlive = setTimeout(() => resolve(true), KEEP_ALIVE_MS);
        }),
      ]);
      clearTimeout(keepAlive);
      if (quiet) {
        yield {};
        continue;
      }
      const activity = await watch.next();
      if (!activity) return;
      yield { activity: toActivityMessage(activity) };
    }
  } finally {
    clearTimeout(keepAlive);
    signal.removeEventListener("abort", close);
    watch.close();
  }
}
