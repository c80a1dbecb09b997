import { context, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { DeliveryEvent, DeliveryObserver } from "../domain/delivery-events.js";
import { outcomeOf } from "./delivery-metrics.js";
import { tracer } from "./tracer.js";

/**
 * A span per delivery attempt, made once the attempt is recorded, in the
 * trace the attempt runs under (the delivery engine makes the trace of the
 * call that accepted the notification active: see StoredJob.traceContext).
 * It spans the receiver's time.
 */
export class TracingObserver implements DeliveryObserver {
  observe(event: DeliveryEvent): void {
    if (event.kind !== "attempt-finished") return;
    const { attempt, notification } = event;
    const outcome = outcomeOf(event);
    const span = tracer.startSpan(
      "webhook.attempt",
      {
        kind: SpanKind.CLIENT,
        startTime: attempt.startedAt,
        attributes: {
          "webhook.job_id": notification.id,
          "webhook.attempt": attempt.attempt,
          "webhook.event": notification.event,
          "webhook.subscription_id": notification.subscriptionId,
          "webhook.outcome": outcome,
          "webhook.attempt.duration_ms": attempt.durationMs,
          ...(attempt.statusCode === undefined ? {} : { "http.response.status_code": attempt.statusCode }),
        },
      },
      context.active(),
    );
    if (!attempt.succeeded)
      span.setStatus({ code: SpanStatusCode.ERROR, message: attempt.error ?? `receiver answered ${attempt.statusCode}` });
    span.end(new Date(attempt.startedAt.getTime() + attempt.durationMs));
  }
}
