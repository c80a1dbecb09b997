import type { Logger } from "pino";
import { openHeaders } from "../domain/custom-headers.js";
import type { DeliveryEvent, DeliveryObserver } from "../domain/delivery-events.js";
import type { KeySealer } from "../domain/key-sealing.js";
import { type DeliveryAttempt, type FinalStatus, SUBSCRIPTION_DELETED, type Subscription } from "../domain/model.js";
import type { SubscriptionStore } from "../domain/ports.js";
import { isRelay } from "../domain/relay.js";
import type { RetryPolicy } from "../domain/retry-policy.js";
import { settleRotation } from "../domain/subscriptions.js";
import { DeliverySigner } from "./delivery-signer.js";
import type { HttpSender } from "./http-sender.js";
import type { DeliveryRead } from "./job-store.js";
import type { RelaySender } from "./relay-sender.js";

/** A retry an attempt asks for: `retry` is its number (1-based); `retryAfterMs`, the receiver's Retry-After. */
export interface RetryRequest {
  reason: string;
  retry: number;
  retryAfterMs?: number;
}

/**
 * What the scheduler does after an attempt: "done" (its record ended or
 * rescheduled the job, or there was nothing to deliver), or "requeue"
 * (shutdown interrupted it: the same attempt runs again later).
 */
export type AttemptOutcome = "done" | "requeue";

/** The scheduler's part in one attempt: told when its request is done, and recording the attempt that ends it. */
export interface AttemptRun {
  /** The receiver's answer (or the failure to get one) is in. */
  requestDone(): void;
  /**
   * Records an attempt that ends its notification (delivered, or failed for
   * good): the notification's job ends with it.
   */
  recordFinal(attempt: DeliveryAttempt, status: FinalStatus): Promise<void>;
  /** Records a failed attempt that leaves its notification pending, with its retry scheduled. */
  recordRetry(attempt: DeliveryAttempt, retry: RetryRequest): Promise<void>;
  /**
   * Whether the subscription's rate limit holds this attempt back: undefined
   * to send now, or the time it waits for (its job is handed back, due then).
   */
  throttle(subscription: Subscription): Promise<Date | undefined>;
  /** Hands the job back unattempted, due at `until` (no attempt is recorded or counted). */
  postpone(until: Date): Promise<void>;
}

/** A held client's job (see `isClientHeld`) is looked at again this much later. */
export const HELD_CLIENT_RECHECK_MS = 15_000;

type Level = "info" | "warn" | "error";

/** One attempt's log lines: its fields are added to a line only when the line is written. */
class AttemptLog {
  constructor(
    private readonly log: Logger,
    private readonly fields: Record<string, unknown>,
  ) {}

  info(fields: Record<string, unknown> | string, message?: string): void {
    this.#write("info", fields, message);
  }

  warn(fields: Record<string, unknown> | string, message?: string): void {
    this.#write("warn", fields, message);
  }

  error(fields: Record<string, unknown> | string, message?: string): void {
    this.#write("error", fields, message);
  }

  #write(level: Level, fields: Record<string, unknown> | string, message?: string): void {
    if (!this.log.isLevelEnabled(level)) return;
    if (typeof fields === "string") this.log[level](this.fields, fields);
    else this.log[level]({ ...this.fields, ...fields }, message);
  }
}

/**
 * One delivery attempt of one notification: sign, POST, record. It knows
 * nothing of Agenda; the scheduler maps its outcome onto the job.
 */
export class DeliveryWorker {
  readonly #signer: DeliverySigner;

  constructor(
    private readonly deps: {
      /** Where failure streaks and automatic disabling are written. */
      subscriptions: SubscriptionStore;
      sender: HttpSender;
      /** Attempts of relay subscriptions go to their listener instead (see domain/relay.ts). */
      relay: RelaySender;
      retryPolicy: RetryPolicy;
      sealer: KeySealer;
      /** A subscription failing this long without a success is disabled; undefined: never. */
      autoDisableAfterMs?: number;
      /** A subscription failing this long without a success is told to its client once (an event); undefined: never. */
      failingNoticeAfterMs?: number;
      /** Told of every attempt and of subscriptions it disables. */
      observer: DeliveryObserver;
      /** Whether the notification's client is disabled or deleted: its jobs wait, unattempted (domain/client-access.ts). */
      isClientHeld?: (clientId: string) => boolean;
      /** Headers sent with every attempt to carry its trace to the receiver (W3C `traceparent`); undefined: none. */
      traceHeaders?: () => Record<string, string>;
      log: Logger;
      shutdown: AbortSignal;
    },
  ) {
    this.#signer = new DeliverySigner(deps.sealer);
  }

  get maxRetries(): number {
    return this.deps.retryPolicy.delaysMs.length;
  }

  /**
   * Makes the notification's next attempt, from `read` (the notification and
   * its subscription as read with the job's lock; undefined: the
   * notification is gone). The attempt number comes from the attempts
   * recorded in the store, so a crash between the POST and the record
   * repeats the same `X-JobAttempt`, and our own failures (store down) never
   * use up the receiver's retries.
   */
  async attempt(notificationId: string, read: DeliveryRead | undefined, run: AttemptRun): Promise<AttemptOutcome> {
    const notification = read?.notification;
    if (notification?.status !== "pending") {
      this.deps.log.debug({ jobId: notificationId, status: notification?.status }, "nothing to deliver");
      return "done";
    }
    if (this.deps.isClientHeld?.(notification.clientId)) {
      await run.postpone(new Date(Date.now() + HELD_CLIENT_RECHECK_MS));
      this.deps.log.debug({ jobId: notificationId, clientId: notification.clientId }, "client disabled or deleted: delivery waits");
      return "done";
    }
    const attempt = notification.attemptCount;
    // Fields on each line rather than a child logger: a child per attempt costs more than the lines it writes.
    const log = new AttemptLog(this.deps.log, { jobId: notificationId, attempt, subscriptionId: notification.subscriptionId });
    const subscription = read?.subscription && settleRotation(read.subscription);
    const startedAt = new Date();
    /** Records an attempt that made no request: the notification fails for good. */
    const abandon = async (error: string) => {
      const record = { notificationId, attempt, startedAt, durationMs: 0, error, succeeded: false };
      await run.recordFinal(record, "failed");
      this.#observe({
        kind: "attempt-finished",
        at: new Date(),
        notification,
        ...(subscription ? { subscription } : {}),
        attempt: record,
        status: "failed",
        sent: false,
      });
    };
    if (!subscription?.enabled) {
      const error = subscription ? "subscription is disabled" : SUBSCRIPTION_DELETED;
      await abandon(error);
      log.warn(`delivery abandoned: ${error}`);
      return "done";
    }

    let headers: Record<string, string>;
    try {
      headers = openHeaders(this.deps.sealer, subscription);
    } catch (err) {
      await abandon(`the subscription's custom headers do not open (${(err as Error).message})`);
      log.error({ err }, "delivery failed: custom headers do not open");
      return "done";
    }
    try {
      // After the custom headers: those the service sets always win (custom-headers.ts refuses their names anyway).
      headers = { ...headers, ...(await this.#signer.headers(notification, subscription, attempt)) };
    } catch (err) {
      // A key that does not open (another SIGNING_MASTER_KEY, a damaged row)
      // will not open on a retry either: fail visibly instead of looping.
      await abandon(`cannot sign: the subscription's signing key does not open (${(err as Error).message})`);
      log.error({ err }, "delivery failed: signing key does not open");
      return "done";
    }
    // As late as can be, so that what the rate limit lets out goes out at once.
    if (subscription.rateLimitPerSecond) {
      const until = await run.throttle(subscription);
      if (until) {
        this.#observe({ kind: "throttled", at: new Date(), notification, subscription, until });
        log.info({ until }, "attempt held back by the subscription's rate limit");
        return "done";
      }
    }
    this.#observe({ kind: "attempt-started", at: new Date(), notification, subscription, attempt });
    const result = isRelay(subscription)
      ? await this.deps.relay.send({ notification, attempt, headers, signal: this.deps.shutdown })
      : await this.deps.sender.send({
          url: subscription.url,
          body: notification.body,
          headers: { ...this.deps.traceHeaders?.(), ...headers },
          signal: this.deps.shutdown,
        });
    run.requestDone();
    if (result.interrupted) {
      log.info("attempt interrupted by shutdown; it will run again");
      return "requeue";
    }

    const succeeded = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    // 410 Gone: the receiver says the endpoint is gone for good; retrying would only annoy it.
    const gone = result.statusCode === 410;
    const lastAttempt = gone || attempt >= this.maxRetries;
    const final: FinalStatus | undefined = succeeded ? "delivered" : lastAttempt ? "failed" : undefined;
    const record = {
      notificationId,
      attempt,
      startedAt,
      durationMs: result.durationMs,
      statusCode: result.statusCode,
      responseBody: result.responseBody,
      error: result.error,
      succeeded,
    };
    const retry: RetryRequest = {
      reason: result.error ?? `receiver answered ${result.statusCode}`,
      retry: attempt + 1,
      retryAfterMs: result.retryAfterMs,
    };
    if (final) {
      this.#signer.forget(notificationId);
      await run.recordFinal(record, final);
    } else await run.recordRetry(record, retry);
    const status = final ?? "pending";
    this.#observe({ kind: "attempt-finished", at: new Date(), notification, subscription, attempt: record, status, sent: true });
    // The attempt is recorded; bookkeeping that fails now must not turn into
    // an early retry (our failure, not the receiver's).
    await this.#trackHealth(subscription, succeeded, startedAt, log).catch((err: unknown) => log.error({ err }, "failure tracking failed"));
    const fields = { statusCode: result.statusCode, durationMs: result.durationMs, error: result.error };
    if (succeeded) {
      log.info(fields, "delivered");
      return "done";
    }
    if (gone) {
      await this.#disable(subscription, "gone", "disabled automatically: the receiver answered 410 Gone").catch((err: unknown) =>
        log.error({ err }, "disabling after 410 failed"),
      );
      log.warn(fields, "receiver answered 410 Gone; subscription disabled, no retries");
      return "done";
    }
    if (lastAttempt) {
      log.warn(fields, "delivery failed; retries exhausted");
      return "done";
    }
    log.info(fields, "delivery failed; will retry");
    return "done";
  }

  /**
   * Keeps the failure streak, and disables a subscription that failed for
   * too long. The streak is written as it starts and as it ends: a failure
   * of a subscription read as failing already (read with its notification,
   * at most a couple of seconds ago) writes nothing, unless the streak as
   * read is long enough to disable it, when the store's own answer decides.
   * So a retry storm costs no write per failed attempt. Should the streak
   * end (a success, or the owner enabling the subscription again) between
   * that read and this failure, the new streak starts at the first failure
   * read after it ended instead of this one: later, never earlier.
   */
  async #trackHealth(subscription: Subscription, succeeded: boolean, at: Date, log: AttemptLog): Promise<void> {
    const { subscriptions } = this.deps;
    if (succeeded) {
      if (subscription.failingSince) await subscriptions.markHealthy(subscription.id);
      return;
    }
    const limit = this.deps.autoDisableAfterMs;
    const disables = (since: Date) => limit !== undefined && at.getTime() - since.getTime() >= limit;
    const notice = this.deps.failingNoticeAfterMs;
    const since = subscription.failingSince;
    // Told once per streak: the store's answer decides between instances.
    if (since && !subscription.failingNoticedAt && notice !== undefined && at.getTime() - since.getTime() >= notice) {
      if (await subscriptions.noticeFailing(subscription.id, since, at))
        this.#observe({ kind: "subscription-failing", at, subscription, failingSince: since });
    }
    if (since && !disables(since)) return;
    const streak = await subscriptions.markFailing(subscription.id, at);
    if (streak && disables(streak)) {
      await this.#disable(subscription, "failing", `disabled automatically: every delivery failed since ${streak.toISOString()}`);
      log.warn({ failingSince: streak }, "subscription disabled after failing too long");
    }
  }

  async #disable(subscription: Subscription, cause: "gone" | "failing", reason: string): Promise<void> {
    const at = new Date();
    // Told once: an instance whose attempt finds it disabled already says nothing.
    if (await this.deps.subscriptions.disable(subscription.id, reason, at))
      this.#observe({ kind: "subscription-disabled", at, subscription, cause, reason });
  }

  #observe(event: DeliveryEvent): void {
    this.deps.observer.observe(event);
  }
}
