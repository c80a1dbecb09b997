import { failureKind } from "../delivery/http-sender.js";
import type { DeliveryEvent, DeliveryObserver } from "../domain/delivery-events.js";
import type { ServiceMetrics } from "./metrics.js";

export type AttemptFinished = Extract<DeliveryEvent, { kind: "attempt-finished" }>;

/**
 * The `outcome` label of an attempt, the first that applies: delivered
 * (2xx); abandoned (no request went out: the subscription was disabled or
 * deleted, its key would not open); forbidden_target (the URL resolved to an
 * address deliveries may not reach); timeout; gone (410, which disables the
 * subscription); failed_final (no retry follows); failed_retryable.
 */
export type DeliveryOutcome = "delivered" | "abandoned" | "forbidden_target" | "timeout" | "gone" | "failed_final" | "failed_retryable";

export function outcomeOf(event: AttemptFinished): DeliveryOutcome {
  if (event.attempt.succeeded) return "delivered";
  if (!event.sent) return "abandoned";
  const kind = failureKind(event.attempt.error);
  if (kind) return kind;
  if (event.attempt.statusCode === 410) return "gone";
  return event.status === "failed" ? "failed_final" : "failed_retryable";
}

const seconds = (from: Date, to: Date) => Math.max(0, (to.getTime() - from.getTime()) / 1000);

/** Turns delivery events into the service's metrics (see metrics.ts). */
export class MetricsObserver implements DeliveryObserver {
  constructor(private readonly metrics: ServiceMetrics) {}

  observe(event: DeliveryEvent): void {
    const { metrics } = this;
    switch (event.kind) {
      case "accepted":
        for (const notification of event.notifications) metrics.accepted.inc({ event: notification.event });
        return;
      case "published":
        metrics.fanout.observe(event.fanout);
        return;
      case "attempt-started":
        if (event.attempt === 0) metrics.lag.observe({ stage: "first_attempt" }, seconds(event.notification.createdAt, event.at));
        return;
      case "attempt-finished": {
        const outcome = outcomeOf(event);
        const labels = { outcome, event: event.notification.event };
        metrics.deliveries.inc(labels);
        if (event.sent) metrics.attemptDuration.observe({ outcome }, event.attempt.durationMs / 1000);
        if (event.status !== "pending") metrics.completed.inc({ status: event.status, event: event.notification.event });
        if (outcome === "delivered") metrics.lag.observe({ stage: "delivered" }, seconds(event.notification.createdAt, event.at));
        return;
      }
      case "subscription-disabled":
        metrics.subscriptionsDisabled.inc({ reason: event.cause });
        return;
    }
  }
}
