import test from "ava";
import { activitiesFromLog, activitiesOf, activityKey, matchesFilter } from "../../src/domain/delivery-activity.js";
import type { DeliveryAttempt, Subscription } from "../../src/domain/model.js";
import { notificationRecord } from "../helpers/subscriptions.js";

const at = new Date("2026-11-23T01:00:00Z");
const notification = notificationRecord({ status: "delivered", attemptCount: 2, createdAt: at });
const failedAttempt: DeliveryAttempt = {
  notificationId: "ntf_1",
  attempt: 0,
  startedAt: at,
  durationMs: 5,
  statusCode: 500,
  succeeded: false,
};
const goodAttempt: DeliveryAttempt = {
  notificationId: "ntf_1",
  attempt: 1,
  startedAt: new Date(at.getTime() + 1000),
  durationMs: 7,
  statusCode: 200,
  succeeded: true,
};

test("an attempt that ends a notification is an attempt-finished and a delivered (or failed)", (t) => {
  const activities = activitiesOf({ kind: "attempt-finished", at, notification, attempt: goodAttempt, status: "delivered", sent: true });
  t.deepEqual(
    activities.map((each) => [each.kind, each.attempt, each.statusCode, each.status]),
    [
      ["attempt-finished", 1, 200, "delivered"],
      ["delivered", undefined, undefined, "delivered"],
    ],
  );
  const retried = activitiesOf({ kind: "attempt-finished", at, notification, attempt: failedAttempt, status: "pending", sent: true });
  t.deepEqual(
    retried.map((each) => each.kind),
    ["attempt-finished"],
  );
});

test("errors are cut short so that an activity fits in one message between instances", (t) => {
  const [activity] = activitiesOf({
    kind: "attempt-finished",
    at,
    notification,
    attempt: { ...failedAttempt, error: "e".repeat(5000) },
    status: "pending",
    sent: true,
  });
  t.is(activity?.error?.length, 500);
});

test("a disabled subscription is one activity with its reason and its client", (t) => {
  const subscription = { id: "sub_1", clientId: "cli_1", event: "Order.Created" } as Subscription;
  const [activity] = activitiesOf({ kind: "subscription-disabled", cause: "failing", at, subscription, reason: "410 Gone" });
  t.like(activity, {
    kind: "subscription-disabled",
    clientId: "cli_1",
    subscriptionId: "sub_1",
    jobId: "",
    reason: "410 Gone",
  });
});

test("filters: client, subscription, event, and outcome (failed attempts, failures and disables; or successes)", (t) => {
  const failed = activitiesOf({ kind: "attempt-finished", at, notification, attempt: failedAttempt, status: "pending", sent: true })[0];
  const [finished, delivered] = activitiesOf({
    kind: "attempt-finished",
    at,
    notification,
    attempt: goodAttempt,
    status: "delivered",
    sent: true,
  });
  const [accepted] = activitiesOf({ kind: "accepted", at, notifications: [notification] });
  if (!failed || !finished || !delivered || !accepted) throw new Error("missing activities");
  t.true(matchesFilter({}, accepted));
  t.true(matchesFilter({ clientId: "cli_1", subscriptionId: "sub_1", event: "Order.Created" }, accepted));
  t.false(matchesFilter({ clientId: "cli_2" }, accepted));
  t.false(matchesFilter({ subscriptionId: "sub_2" }, accepted));
  t.false(matchesFilter({ event: "Order.Shipped" }, accepted));
  t.deepEqual(
    [failed, finished, delivered, accepted].map((each) => matchesFilter({ outcome: "failed" }, each)),
    [true, false, false, false],
  );
  t.deepEqual(
    [failed, finished, delivered, accepted].map((each) => matchesFilter({ outcome: "succeeded" }, each)),
    [false, true, true, false],
  );
});

test("the log replays acceptance and each attempt's end since a time, marked replayed, keyed like the live ones", (t) => {
  const all = activitiesFromLog(notification, [failedAttempt, goodAttempt], at);
  t.deepEqual(
    all.map((each) => [each.kind, each.attempt, each.status, each.replayed]),
    [
      ["accepted", undefined, "pending", true],
      ["attempt-finished", 0, "pending", true],
      ["attempt-finished", 1, "delivered", true],
      ["delivered", undefined, "delivered", true],
    ],
  );
  const live = activitiesOf({ kind: "attempt-finished", at, notification, attempt: goodAttempt, status: "delivered", sent: true });
  t.deepEqual(live.map(activityKey), all.slice(2).map(activityKey));
  const later = activitiesFromLog(notification, [failedAttempt, goodAttempt], new Date(at.getTime() + 500));
  t.deepEqual(
    later.map((each) => each.kind),
    ["attempt-finished", "delivered"],
  );
});

test("a relay request goes only to a watcher of the client naming its relay subscription, whatever its other filters", (t) => {
  const request = {
    kind: "relay-request" as const,
    at,
    clientId: "cli_1",
    subscriptionId: "sub_relay",
    event: "Order.Created",
    jobId: "ntf_1",
    attempt: 0,
    body: "{}",
  };
  t.false(matchesFilter({ clientId: "cli_1" }, request));
  t.false(matchesFilter({}, request), "not even an admin watching everything");
  t.true(matchesFilter({ clientId: "cli_1", relaySubscriptionIds: ["sub_relay"] }, request));
  t.true(matchesFilter({ clientId: "cli_1", subscriptionId: "sub_other", relaySubscriptionIds: ["sub_relay"] }, request));
  t.false(matchesFilter({ clientId: "cli_2", relaySubscriptionIds: ["sub_relay"] }, request), "never another client's");
});
