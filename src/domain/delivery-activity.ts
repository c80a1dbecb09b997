import type { DeliveryEvent } from "./delivery-events.js";
import type { DeliveryAttempt, Notification, NotificationStatus } from "./model.js";

export type ActivityKind =
  | "accepted"
  | "attempt-started"
  | "attempt-finished"
  | "delivered"
  | "failed"
  | "subscription-disabled"
  /** An attempt of a relay subscription, for its listener to forward (see relay.ts). */
  | "relay-request"
  /** The subscription's rate limit holds the next attempt back until `nextAttemptAt`. */
  | "throttled";

/**
 * One thing that happened to a notification, as a watcher sees it: flat,
 * owned by one client, small enough to cross between instances.
 */
export interface DeliveryActivity {
  kind: ActivityKind;
  at: Date;
  clientId: string;
  subscriptionId: string;
  event: string;
  /** The `X-JobId`; "" for subscription-disabled. */
  jobId: string;
  /** The `X-JobAttempt` of attempt-started and attempt-finished. */
  attempt?: number;
  statusCode?: number;
  durationMs?: number;
  error?: string;
  succeeded?: boolean;
  /** The notification's status after it. */
  status?: NotificationStatus;
  /** subscription-disabled: why. */
  reason?: string;
  /** Read back from the delivery log rather than seen as it happened. */
  replayed?: boolean;
  /** relay-request: the headers the delivery carries, and its body (absent when it came from another instance: read it from the log). */
  headers?: Record<string, string>;
  body?: string;
  /** throttled: when the attempt held back goes out. */
  nextAttemptAt?: Date;
}

export type Outcome = "succeeded" | "failed";

/** What a watcher wants. A client's watch always carries its `clientId`. */
export interface ActivityFilter {
  /** Unset only for an admin watching every client. */
  clientId?: string;
  subscriptionId?: string;
  event?: string;
  outcome?: Outcome;
  /** The relay subscriptions whose relay requests this watcher forwards; no other watcher gets them. */
  relaySubscriptionIds?: readonly string[];
}

/** Errors beyond this are cut: an activity crosses instances in one small message. */
const MAX_ERROR_CHARS = 500;

function attemptFields(attempt: DeliveryAttempt): Partial<DeliveryActivity> {
  return {
    attempt: attempt.attempt,
    durationMs: attempt.durationMs,
    succeeded: attempt.succeeded,
    ...(attempt.statusCode === undefined ? {} : { statusCode: attempt.statusCode }),
    ...(attempt.error === undefined ? {} : { error: attempt.error.slice(0, MAX_ERROR_CHARS) }),
  };
}

function ofNotification(notification: Notification): Pick<DeliveryActivity, "clientId" | "subscriptionId" | "event" | "jobId"> {
  return {
    clientId: notification.clientId,
    subscriptionId: notification.subscriptionId,
    event: notification.event,
    jobId: notification.id,
  };
}

/** An attempt's end, and the notification's end when the attempt was its last. */
function finished(notification: Notification, attempt: DeliveryAttempt, status: NotificationStatus, at: Date, replayed: boolean) {
  const mark = replayed ? { replayed: true } : {};
  const activities: DeliveryActivity[] = [
    { kind: "attempt-finished", at, ...ofNotification(notification), ...attemptFields(attempt), status, ...mark },
  ];
  if (status !== "pending") activities.push({ kind: status, at, ...ofNotification(notification), status, ...mark });
  return activities;
}

/** The activities a delivery event stands for. */
export function activitiesOf(event: DeliveryEvent): DeliveryActivity[] {
  switch (event.kind) {
    case "published":
    case "subscription-failing":
      return [];
    case "accepted":
      return event.notifications.map((n) => ({ kind: "accepted", at: event.at, ...ofNotification(n), status: "pending" }));
    case "attempt-started":
      return [{ kind: "attempt-started", at: event.at, ...ofNotification(event.notification), attempt: event.attempt, status: "pending" }];
    case "attempt-finished":
      return finished(event.notification, event.attempt, event.status, event.at, false);
    case "throttled":
      return [{ kind: "throttled", at: event.at, ...ofNotification(event.notification), status: "pending", nextAttemptAt: event.until }];
    case "subscription-disabled":
      return [
        {
          kind: "subscription-disabled",
          at: event.at,
          clientId: event.subscription.clientId,
          subscriptionId: event.subscription.id,
          event: event.subscription.event,
          jobId: "",
          reason: event.reason,
        },
      ];
  }
}

/**
 * What the delivery log says happened to a notification at or after
 * `since`: its acceptance, then each attempt's end (the log keeps no start).
 * The status after an attempt is read from the notification: pending for
 * every attempt but its last.
 */
export function activitiesFromLog(notification: Notification, attempts: readonly DeliveryAttempt[], since: Date): DeliveryActivity[] {
  const activities: DeliveryActivity[] = [];
  if (notification.createdAt >= since) {
    activities.push({ kind: "accepted", at: notification.createdAt, ...ofNotification(notification), status: "pending", replayed: true });
  }
  attempts.forEach((attempt, index) => {
    const end = new Date(attempt.startedAt.getTime() + attempt.durationMs);
    if (end < since) return;
    const status = index === attempts.length - 1 ? notification.status : "pending";
    activities.push(...finished(notification, attempt, status, end, true));
  });
  return activities;
}

function outcomeOf(activity: DeliveryActivity): Outcome | undefined {
  switch (activity.kind) {
    case "attempt-finished":
      return activity.succeeded ? "succeeded" : "failed";
    case "delivered":
      return "succeeded";
    case "failed":
    case "subscription-disabled":
      return "failed";
    default:
      return undefined;
  }
}

/** Whether a watcher with this filter sees the activity. */
export function matchesFilter(filter: ActivityFilter, activity: DeliveryActivity): boolean {
  if (activity.kind === "relay-request") {
    return (
      (filter.clientId === undefined || filter.clientId === activity.clientId) &&
      (filter.relaySubscriptionIds?.includes(activity.subscriptionId) ?? false)
    );
  }
  if (filter.clientId !== undefined && filter.clientId !== activity.clientId) return false;
  if (filter.subscriptionId !== undefined && filter.subscriptionId !== activity.subscriptionId) return false;
  if (filter.event !== undefined && filter.event !== activity.event) return false;
  if (filter.outcome !== undefined && filter.outcome !== outcomeOf(activity)) return false;
  return true;
}

/** Identifies an activity across the log and the live feed, so that a replay and the live feed overlap without repeats. */
export function activityKey(activity: DeliveryActivity): string {
  return `${activity.jobId || activity.subscriptionId}/${activity.kind}/${activity.attempt ?? ""}`;
}
