import type { DeliveryAttempt, Notification, NotificationStatus, Subscription } from "./model.js";

/**
 * What happens to notifications, as it happens: what metrics, traces and
 * the live delivery stream observe. Observers are told after the fact and
 * must not throw or block: they are called on the delivery path.
 */
export type DeliveryEvent =
  /** Notifications were accepted (stored and queued), by a publish, a sample, a redelivery or a recovery. */
  | { kind: "accepted"; at: Date; notifications: readonly Notification[] }
  /** A publish fanned an event out to `fanout` subscriptions (0: nobody subscribes); not told of a repeated idempotency key. */
  | { kind: "published"; at: Date; event: string; fanout: number }
  /** An attempt's request is about to go out. */
  | { kind: "attempt-started"; at: Date; notification: Notification; subscription: Subscription; attempt: number }
  /**
   * An attempt ended and was recorded: `status` is the notification's status
   * after it (`pending`: a retry follows; `delivered`; `failed`: for good).
   * `subscription` is absent when it was deleted before the attempt.
   * `sent`: a request went out (false: the attempt was abandoned before, see the attempt's error).
   */
  | {
      kind: "attempt-finished";
      at: Date;
      notification: Notification;
      subscription?: Subscription;
      attempt: DeliveryAttempt;
      status: NotificationStatus;
      sent: boolean;
    }
  /** The subscription's rate limit holds the notification's next attempt back until `until`: waiting, not failing. */
  | { kind: "throttled"; at: Date; notification: Notification; subscription: Subscription; until: Date }
  /** A subscription's deliveries have all failed since `failingSince`, for as long as the client is told of (once per streak). */
  | { kind: "subscription-failing"; at: Date; subscription: Subscription; failingSince: Date }
  /** A subscription was disabled by the service: its receiver answered 410 Gone, or every delivery failed too long. */
  | { kind: "subscription-disabled"; at: Date; subscription: Subscription; cause: "gone" | "failing"; reason: string };

export interface DeliveryObserver {
  observe(event: DeliveryEvent): void;
}

/** One observer that tells each of `observers`; one that throws does not keep the others from hearing. */
export function observeAll(observers: readonly DeliveryObserver[], onError: (error: unknown) => void): DeliveryObserver {
  return {
    observe(event) {
      for (const observer of observers) {
        try {
          observer.observe(event);
        } catch (error) {
          onError(error);
        }
      }
    },
  };
}

/** Observes nothing. */
export const noObserver: DeliveryObserver = { observe() {} };
