import test from "ava";
import type { DeliveryEvent } from "../../src/domain/delivery-events.js";
import type { Notification, NotificationStatus, Subscription } from "../../src/domain/model.js";
import { RecentDeliveries } from "../../src/observability/recent-deliveries.js";

const MINUTE = 60_000;
const start = new Date("2026-01-01T00:00:00Z").getTime();
const notification = { id: "ntf_1", subscriptionId: "sub_1", clientId: "cli_1", event: "Order.Created" } as Notification;
const subscription = (url: string) => ({ id: `sub_${url}`, clientId: "cli_1", event: "Order.Created", url }) as Subscription;

function finished(at: number, url: string, durationMs: number, status: NotificationStatus, sent = true): DeliveryEvent {
  const succeeded = status === "delivered";
  return {
    kind: "attempt-finished",
    at: new Date(at),
    notification,
    subscription: subscription(url),
    attempt: { notificationId: notification.id, attempt: 0, startedAt: new Date(at - durationMs), durationMs, succeeded },
    status,
    sent,
  };
}

function recentAt(clock: { now: number }) {
  return new RecentDeliveries({ windowMs: 60 * MINUTE, now: () => clock.now });
}

test("counts delivered and failed notifications, failed attempts, and ranks endpoints by average duration", (t) => {
  const clock = { now: start };
  const recent = recentAt(clock);
  recent.observe(finished(start + 1_000, "https://fast.example/hook", 20, "delivered"));
  recent.observe(finished(start + 2_000, "https://slow.example/hook", 900, "pending"));
  recent.observe(finished(start + 3_000, "https://slow.example/hook", 1_100, "failed"));
  // Abandoned: nothing was sent, so no endpoint is timed, but the attempt failed.
  recent.observe(finished(start + 4_000, "https://never.example/hook", 0, "failed", false));
  clock.now = start + 5_000;

  const summary = recent.summary();
  t.is(summary.delivered, 1);
  t.is(summary.failed, 2);
  t.is(summary.failedAttempts, 3);
  t.deepEqual(summary.since, new Date(start), "the window starts when the instance did");
  t.deepEqual(summary.slowestEndpoints, [
    { url: "https://slow.example/hook", attempts: 2, averageMs: 1_000, maxMs: 1_100, failedAttempts: 2 },
    { url: "https://fast.example/hook", attempts: 1, averageMs: 20, maxMs: 20, failedAttempts: 0 },
  ]);
});

test("lists subscriptions the service disabled, newest first", (t) => {
  const clock = { now: start };
  const recent = recentAt(clock);
  for (const [minutes, url] of [
    [1, "https://a.example/"],
    [2, "https://b.example/"],
  ] as const)
    recent.observe({
      kind: "subscription-disabled",
      at: new Date(start + minutes * MINUTE),
      subscription: subscription(url),
      cause: "gone",
      reason: "the receiver answered 410 Gone",
    });
  clock.now = start + 3 * MINUTE;
  t.deepEqual(
    recent.summary().disabled.map((disabled) => [disabled.url, disabled.reason, disabled.at.getTime()]),
    [
      ["https://b.example/", "the receiver answered 410 Gone", start + 2 * MINUTE],
      ["https://a.example/", "the receiver answered 410 Gone", start + MINUTE],
    ],
  );
});

test("forgets what is older than the window", (t) => {
  const clock = { now: start };
  const recent = recentAt(clock);
  recent.observe(finished(start + 1_000, "https://old.example/", 50, "delivered"));
  recent.observe(finished(start + 30 * MINUTE, "https://new.example/", 70, "delivered"));
  clock.now = start + 61 * MINUTE;
  const summary = recent.summary();
  t.is(summary.delivered, 1);
  t.deepEqual(
    summary.slowestEndpoints.map((endpoint) => endpoint.url),
    ["https://new.example/"],
  );
  t.deepEqual(summary.since, new Date(start + MINUTE));
  clock.now = start + 91 * MINUTE;
  t.is(recent.summary().delivered, 0);
});
