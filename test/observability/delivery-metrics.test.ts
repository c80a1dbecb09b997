import test from "ava";
import type { DeliveryEvent } from "../../src/domain/delivery-events.js";
import type { Subscription } from "../../src/domain/model.js";
import { type AttemptFinished, MetricsObserver, outcomeOf } from "../../src/observability/delivery-metrics.js";
import { ServiceMetrics } from "../../src/observability/metrics.js";
import { notificationRecord } from "../helpers/subscriptions.js";

const accepted = new Date("2026-01-01T00:00:00Z");
const notification = notificationRecord({ createdAt: accepted });
const subscription = { id: "sub_1", clientId: "cli_1", event: "Order.Created" } as Subscription;
const later = (seconds: number) => new Date(accepted.getTime() + seconds * 1000);

function finished(
  fields: { statusCode?: number; error?: string; succeeded?: boolean; durationMs?: number },
  status: AttemptFinished["status"],
  sent = true,
): AttemptFinished {
  return {
    kind: "attempt-finished",
    at: later(3),
    notification,
    subscription,
    attempt: { notificationId: notification.id, attempt: 0, startedAt: later(1), durationMs: 250, succeeded: false, ...fields },
    status,
    sent,
  };
}

test("outcomeOf: the first label that applies", (t) => {
  t.is(outcomeOf(finished({ statusCode: 204, succeeded: true }, "delivered")), "delivered");
  t.is(outcomeOf(finished({ error: "subscription was deleted" }, "failed", false)), "abandoned");
  t.is(outcomeOf(finished({ error: "refused: 10.0.0.1 is a private address" }, "pending")), "forbidden_target");
  t.is(outcomeOf(finished({ error: "timeout: no answer within 2000 ms" }, "failed")), "timeout");
  t.is(outcomeOf(finished({ statusCode: 410 }, "failed")), "gone");
  t.is(outcomeOf(finished({ statusCode: 500 }, "failed")), "failed_final");
  t.is(outcomeOf(finished({ error: "ECONNREFUSED: connect ECONNREFUSED" }, "pending")), "failed_retryable");
});

/** One sample's value from the registry, by metric name and labels (undefined: no such series). */
async function sample(metrics: ServiceMetrics, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const metricName = name.replace(/_(bucket|sum|count)$/, "");
  const metric = metrics.registry.getSingleMetric(metricName);
  const values = (await metric?.get())?.values ?? [];
  const found = values.find(
    (value) =>
      ((value as { metricName?: string }).metricName ?? metricName) === name &&
      Object.entries(labels).every(([key, wanted]) => String((value.labels as Record<string, unknown>)[key]) === wanted),
  );
  return found?.value;
}

test("the observer counts acceptances, fan-outs, attempts by outcome, lags, completions and disabled subscriptions", async (t) => {
  const metrics = new ServiceMetrics({ onReadError: () => t.fail() });
  const observer = new MetricsObserver(metrics);
  const events: DeliveryEvent[] = [
    { kind: "accepted", at: accepted, notifications: [notification, { ...notification, id: "ntf_2" }] },
    { kind: "published", at: accepted, event: "Order.Created", fanout: 2 },
    { kind: "published", at: accepted, event: "Order.Created", fanout: 0 },
    { kind: "attempt-started", at: later(1), notification, subscription, attempt: 0 },
    finished({ statusCode: 500 }, "pending"),
    { kind: "attempt-started", at: later(5), notification, subscription, attempt: 1 },
    finished({ statusCode: 200, succeeded: true }, "delivered"),
    { ...finished({ statusCode: 410 }, "failed"), notification: { ...notification, event: "Order.Shipped" } },
    { kind: "subscription-disabled", at: later(4), subscription, cause: "gone", reason: "disabled automatically: 410" },
  ];
  for (const event of events) observer.observe(event);

  t.is(await sample(metrics, "webhook_notifications_accepted_total", { event: "Order.Created" }), 2);
  t.is(await sample(metrics, "webhook_publish_fanout_count"), 2);
  t.is(await sample(metrics, "webhook_publish_fanout_sum"), 2);
  t.is(await sample(metrics, "webhook_publish_fanout_bucket", { le: "0" }), 1);
  t.is(await sample(metrics, "webhook_deliveries_total", { outcome: "failed_retryable", event: "Order.Created" }), 1);
  t.is(await sample(metrics, "webhook_deliveries_total", { outcome: "delivered", event: "Order.Created" }), 1);
  t.is(await sample(metrics, "webhook_deliveries_total", { outcome: "gone", event: "Order.Shipped" }), 1);
  t.is(await sample(metrics, "webhook_notifications_completed_total", { status: "delivered", event: "Order.Created" }), 1);
  t.is(await sample(metrics, "webhook_notifications_completed_total", { status: "failed", event: "Order.Shipped" }), 1);
  t.is(await sample(metrics, "webhook_delivery_attempt_duration_seconds_sum", { outcome: "delivered" }), 0.25);
  t.is(await sample(metrics, "webhook_delivery_lag_seconds_count", { stage: "first_attempt" }), 1, "a retry's start is no first attempt");
  t.is(await sample(metrics, "webhook_delivery_lag_seconds_sum", { stage: "first_attempt" }), 1);
  t.is(await sample(metrics, "webhook_delivery_lag_seconds_sum", { stage: "delivered" }), 3);
  t.is(await sample(metrics, "webhook_subscriptions_disabled_total", { reason: "gone" }), 1);
});

test("one scrape reads the job store's counts once for all the queue gauges; the lanes are read as they are", async (t) => {
  const metrics = new ServiceMetrics({ onReadError: () => t.fail() });
  let reads = 0;
  const oldestDueAt = new Date(Date.now() - 90_000);
  metrics.watch({
    counts: async () => {
      reads++;
      return { due: 7, scheduled: 3, locked: 2, oldestDueAt };
    },
    occupancy: () => ({ inFlight: 5, waiting: 4, endpointsInFlight: 2, endpointsAtLimit: 1 }),
  });
  const text = await metrics.registry.metrics();
  t.is(reads, 1);
  t.regex(text, /^webhook_queue_pending 7$/m);
  t.regex(text, /^webhook_queue_scheduled 3$/m);
  t.regex(text, /^webhook_queue_running 2$/m);
  const age = Number(/^webhook_queue_oldest_pending_age_seconds (\S+)$/m.exec(text)?.[1]);
  t.true(age >= 90 && age < 120, String(age));
  t.regex(text, /^webhook_deliveries_in_flight 5$/m);
  t.regex(text, /^webhook_endpoints_in_flight 2$/m);
  t.regex(text, /^webhook_endpoints_at_concurrency_cap 1$/m);
  t.regex(text, /^process_cpu_user_seconds_total /m, "the default Node process metrics");
  await metrics.registry.metrics();
  t.is(reads, 2, "the next scrape reads again");
});

test("a failing read of the counts leaves the queue gauges as they were and is reported", async (t) => {
  const errors: unknown[] = [];
  const metrics = new ServiceMetrics({ onReadError: (error) => errors.push(error) });
  let fail = false;
  metrics.watch({
    counts: async () => {
      if (fail) throw new Error("store down");
      return { due: 1, scheduled: 0, locked: 0, oldestDueAt: null };
    },
    occupancy: () => ({ inFlight: 0, waiting: 0, endpointsInFlight: 0, endpointsAtLimit: 0 }),
  });
  await metrics.registry.metrics();
  fail = true;
  const text = await metrics.registry.metrics();
  t.regex(text, /^webhook_queue_pending 1$/m);
  t.is(errors.length, 1);
});
