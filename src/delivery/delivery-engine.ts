import { context } from "@opentelemetry/api";
import { Agenda, type Job, type NotificationChannel } from "agenda";
import type { Logger } from "pino";
import { endpointOf } from "../domain/endpoint.js";
import type { Notification, Subscription } from "../domain/model.js";
import type { AcceptedPublish, DeliveryQueue, PublishedBatchItem } from "../domain/ports.js";
import { type RetryPolicy, retryDelay } from "../domain/retry-policy.js";
import { contextOfTraceParent, currentTraceParent } from "../observability/trace-context.js";
import { AgendaJobs, DELIVER_JOB, type DeliverJobData, type Lease } from "./agenda-jobs.js";
import { DeliveryHealth, type HealthReport } from "./delivery-health.js";
import type { AttemptOutcome, DeliveryWorker } from "./delivery-worker.js";
import { EarnedConcurrency } from "./fairness/earned-concurrency.js";
import type { LaneOccupancy } from "./fairness/fair-lanes.js";
import { Throttle } from "./fairness/throttle.js";
import { JobFeed } from "./job-feed.js";
import type { HeldJob, JobCounts, JobStore, LockedJob, NewDelivery } from "./job-store.js";
import { WakeChannel } from "./wake-channel.js";

export interface DeliveryEngineOptions {
  worker: DeliveryWorker;
  retryPolicy: RetryPolicy;
  /** Attempts running at once in this instance. */
  concurrency: number;
  /** Requests in flight this instance gives any one endpoint and any one client to begin with (see fairness/earned-concurrency.ts). */
  limits: { perEndpoint: number; perClient: number };
  /** How often Agenda looks for due jobs (other instances' jobs and retries, expired locks). */
  pollIntervalMs: number;
  /** Longer than any attempt, so no other instance runs one twice; a crashed instance's jobs come back after it. */
  lockLifetimeMs: number;
  /** Unique per instance: the holder of its locks. */
  name: string;
  log: Logger;
}

/**
 * A receiver slower than this to answer (or with a request in flight this
 * long) is held to the floor of requests in flight; one faster earns more.
 * Receivers are expected to acknowledge quickly and do their work after.
 */
const SLOW_ANSWER_MS = 1_000;
/** A job locked ahead is handed out only this fresh (or a quarter of its lock lifetime, if less). */
const HANDOUT_MAX_AGE_MS = 2_000;
/** A fetch that found nothing due spares Agenda's asks another this long. */
const DRAINED_FOR_MS = 250;
/** An attempt that failed on our side (the store unreachable…), not the receiver's, runs again this much later. */
const OWN_FAILURE_RETRY_MS = 10_000;
/** Retries are fetched within 20 ms of falling due; past 10,000 distinct due times, the poll finds them. */
const RETRY_DUE = { stepMs: 20, maxPending: 10_000 };
/** After a failed poll, the next in 200 ms, doubling up to 5 s while failures go on. */
const POLL_BACKOFF = { initialMs: 200, maxMs: 5_000 };
/** Running attempts get this long to save their state once interrupted at shutdown. */
const INTERRUPTED_SAVE_WAIT_MS = 5_000;

/**
 * The delivery engine: Agenda runs every attempt as a persisted job, fed
 * fairly by a JobFeed from the job store; each run records its attempt and
 * ends or reschedules its job in one write. The rest of the service sees
 * the DeliveryQueue port (accept), plus start, stop and health.
 */
export class DeliveryEngine implements DeliveryQueue {
  readonly #agenda: Agenda;
  readonly #feed: JobFeed;
  readonly #jobs: AgendaJobs;
  readonly #channel: WakeChannel;
  readonly #health: DeliveryHealth;
  readonly #throttle: Throttle;
  /** Attempts started and not yet over. */
  #running = 0;
  #onIdle: Array<() => void> = [];

  constructor(
    private readonly store: JobStore,
    remote: NotificationChannel | undefined,
    private readonly options: DeliveryEngineOptions,
  ) {
    const { log } = options;
    this.#channel = new WakeChannel(
      options.name,
      remote,
      () => this.#feed.pulse(),
      (err) => log.warn({ err }, "wake-up between instances failed; the poll finds their jobs"),
    );
    const now = () => performance.now();
    const { perEndpoint, perClient } = options.limits;
    this.#feed = new JobFeed(store, {
      batchSize: options.concurrency,
      limits: {
        // Whatever one receiver does, at least half of the instance's attempts stay with everyone else;
        // whatever one client does, at least a client's floor of them.
        endpoint: new EarnedConcurrency({
          floor: perEndpoint,
          ceiling: Math.max(perEndpoint, Math.floor(options.concurrency / 2)),
          slowMs: SLOW_ANSWER_MS,
          now,
        }),
        client: new EarnedConcurrency({
          floor: perClient,
          ceiling: Math.max(perClient, options.concurrency - perClient),
          slowMs: SLOW_ANSWER_MS,
          now,
        }),
      },
      handoutMaxAgeMs: Math.min(HANDOUT_MAX_AGE_MS, options.lockLifetimeMs / 4),
      drainedForMs: DRAINED_FOR_MS,
      due: RETRY_DUE,
      backoff: POLL_BACKOFF,
      onRunnable: () => this.#channel.wake(),
      onFetched: (outcome) => {
        if (!outcome.ok) log.error({ err: outcome.error }, "polling for due deliveries failed; retrying");
        this.#health.polled(outcome);
      },
      onUnlockError: (err) => log.warn({ err }, "handing back job locks failed; they expire by themselves"),
    });
    this.#throttle = new Throttle(store, () => this.#feed.pulse());
    this.#health = new DeliveryHealth({
      stallAfterMs: Math.max(5 * options.pollIntervalMs, 10_000),
      unservedMs: () => this.#feed.unservedMs(),
    });
    this.#jobs = new AgendaJobs(this.#feed, { renew: (job, lockedAt) => this.#saved(store.renew(job, lockedAt)) });
    this.#agenda = new Agenda({
      backend: {
        name: "webhook delivery jobs",
        repository: this.#jobs,
        notificationChannel: this.#channel,
        ownsConnection: false,
        connect: async () => {},
        disconnect: async () => {},
      },
      name: options.name,
      processEvery: options.pollIntervalMs,
      maxConcurrency: options.concurrency,
      // Agenda takes only jobs it can start at once: the rest wait in the feed's fair lanes.
      lockLimit: options.concurrency,
      defaultConcurrency: options.concurrency,
      defaultLockLimit: options.concurrency,
      defaultLockLifetime: options.lockLifetimeMs,
      // Each run ends its own job (#end): Agenda has nothing to remove.
      removeOnComplete: false,
    });
    this.#agenda.on("error", (err) => log.error({ err }, "scheduler error"));
    this.#agenda.on(`start:${DELIVER_JOB}`, () => this.#running++);
    this.#agenda.on(`complete:${DELIVER_JOB}`, () => {
      if (--this.#running === 0) for (const wake of this.#onIdle.splice(0)) wake();
      // A slot is free: Agenda takes more only on a poll or a wake-up.
      if (this.#feed.runnable) this.#channel.wake();
    });
    this.#agenda.define<DeliverJobData>(DELIVER_JOB, (job) => this.#run(job));
  }

  /**
   * Stores the notifications with their jobs. Those the feed has room for,
   * while the store holds nothing due that they would overtake, go in locked
   * for this instance and straight into its lanes, with what their attempts
   * read: no lock statement, no read. The rest go in unlocked, for whichever
   * instance locks them first.
   */
  async accept(notifications: readonly Notification[], subscriptions: readonly Subscription[]): Promise<void> {
    if (notifications.length === 0) return;
    const deliveries = this.#deliveries(notifications, subscriptions);
    const lockedAt = new Date();
    const reserved = this.#feed.reserve(
      deliveries.map((delivery) => ({ endpoint: delivery.endpoint, clientId: delivery.notification.clientId })),
    );
    const toInsert = deliveries.map((delivery, i) => (reserved[i] ? { ...delivery, lockedAt } : delivery));
    await this.store.insert(toInsert);
    const byId = new Map(subscriptions.map((subscription) => [subscription.id, subscription]));
    this.#feed.adopt(
      toInsert.flatMap((delivery): LockedJob[] => {
        const subscription = byId.get(delivery.notification.subscriptionId);
        if (!delivery.lockedAt || !subscription) return [];
        const { notification, endpoint, traceContext } = delivery;
        const job = { id: notification.id, endpoint, clientId: notification.clientId, lockedAt, read: { notification, subscription } };
        return [traceContext ? { ...job, traceContext } : job];
      }),
    );
    if (reserved.includes(false)) this.#announce();
  }

  /** Without any idempotency key, as `accept` (one statement); else in one transaction, nothing locked. */
  async acceptBatch(items: readonly PublishedBatchItem[], subscriptions: readonly Subscription[]): Promise<AcceptedPublish[]> {
    if (items.every((item) => item.key === undefined)) {
      await this.accept(
        items.flatMap((item) => item.notifications),
        subscriptions,
      );
      return items.map((item) => ({ ids: item.notifications.map((notification) => notification.id), duplicate: false }));
    }
    const toDelivery = this.#toDelivery(subscriptions);
    const answers = await this.store.insertBatch(
      items.map((item) => ({
        clientId: item.clientId,
        ...(item.key === undefined ? {} : { key: item.key }),
        deliveries: item.notifications.map(toDelivery),
      })),
    );
    if (answers.some((answer) => !answer.duplicate && answer.ids.length > 0)) this.#announce();
    return answers;
  }

  async start(): Promise<void> {
    await this.store.prepare();
    await this.#agenda.start();
  }

  /**
   * Stops taking jobs and waits for running attempts to save their state.
   * When `drainTimeoutMs` passes, `interrupt` aborts the rest: they are
   * saved to run again, not lost.
   */
  async stop(drainTimeoutMs: number, interrupt: () => void): Promise<void> {
    // Agenda stops polling and hands back the jobs it held but had not started; then the feed hands back its own.
    await this.#agenda.stop(false);
    this.#throttle.stop();
    await this.#feed.release();
    if (!(await this.#idle(drainTimeoutMs))) {
      interrupt();
      await this.#idle(INTERRUPTED_SAVE_WAIT_MS);
    }
  }

  health(): HealthReport {
    return this.#health.report();
  }

  /** This instance's requests in flight and jobs waiting for a slot, by endpoint. */
  occupancy(): LaneOccupancy {
    return this.#feed.occupancy();
  }

  /** The queue as the job store counts it, across every instance. */
  counts(): Promise<JobCounts> {
    return this.store.counts();
  }

  async #run(job: Job<DeliverJobData>): Promise<void> {
    const lease = this.#jobs.leaseOf(job.attrs);
    if (!lease) throw new Error(`job ${job.attrs.data.notificationId} started without a lease`);
    let requestOver = false;
    // The endpoint's slot is free once its request is over; saving the outcome doesn't need it.
    // A run that made no request (nothing to deliver, the store failing) says nothing of the endpoint's speed.
    const requestDone = (answered: boolean) => {
      if (requestOver) return;
      requestOver = true;
      this.#feed.finish(lease.job, answered);
    };
    // An attempt outliving a third of its lock's lifetime (a slow store) renews the lock, so that no
    // other instance takes the job over while it runs.
    const renewal = setInterval(() => {
      job.touch().catch((err: unknown) => this.options.log.warn({ err, jobId: lease.job.id }, "renewing a job's lock failed"));
    }, this.options.lockLifetimeMs / 3);
    try {
      // The attempt joins the trace of the call that accepted its notification.
      const outcome = await context.with(contextOfTraceParent(lease.job.traceContext), () =>
        this.options.worker.attempt(lease.job.id, lease.job.read, {
          requestDone: () => requestDone(true),
          recordFinal: (attempt, status) => this.#end(lease, (held) => this.store.finish({ ...held, attempt, status })),
          throttle: async (subscription) => {
            const rate = subscription.rateLimitPerSecond;
            const until = rate ? await this.#throttle.admit(subscription.id, rate, lease.job.throttleSlotAt) : undefined;
            if (until) await this.#end(lease, (held) => this.store.waitForSlot(held, until));
            return until;
          },
          postpone: (until) => this.#end(lease, (held) => this.store.reschedule(held, until)),
          recordRetry: (attempt, retry) => {
            const delayMs = retryDelay(this.options.retryPolicy, retry.retry, retry.retryAfterMs);
            // The worker asks for no retry beyond the policy's last.
            if (delayMs === null) return Promise.reject(new Error(`retry ${retry.retry} is beyond the retry policy`));
            const nextRunAt = new Date(Date.now() + delayMs);
            return this.#end(lease, async (held) => {
              const saved = await this.store.retry({ ...held, attempt, nextRunAt });
              if (saved) this.#feed.dueAt(nextRunAt);
              return saved;
            });
          },
        }),
      );
      await this.#settle(lease, outcome);
    } catch (err) {
      // Our own failure, not the receiver's (the store unreachable): the same attempt again soon, unless its
      // end was written after all (then the job no longer has the lock, and this writes nothing); if this
      // write fails too, the lock's expiry brings the job back.
      this.options.log.error({ err, jobId: lease.job.id }, "a delivery attempt failed on our side; it runs again");
      const nextRunAt = new Date(Date.now() + OWN_FAILURE_RETRY_MS);
      await this.#end(lease, (held) => this.store.reschedule(held, nextRunAt)).catch((error: unknown) =>
        this.options.log.warn({ err: error, jobId: lease.job.id }, "rescheduling a job failed; its lock expires and it runs again"),
      );
    } finally {
      clearInterval(renewal);
      requestDone(false);
    }
  }

  /** Ends the job of a run that wrote no end of its own: nothing to deliver, or an attempt interrupted. */
  async #settle(lease: Lease, outcome: AttemptOutcome): Promise<void> {
    if (lease.ended) return;
    if (outcome === "requeue") {
      const now = new Date();
      await this.#end(lease, (held) => this.store.reschedule(held, now));
    } else await this.#end(lease, (held) => this.store.remove(held));
  }

  /** The run's last write: its job's end (a retry is fetched once due: JobFeed.dueAt). */
  async #end(lease: Lease, write: (held: HeldJob) => Promise<boolean>): Promise<void> {
    await lease.end((held) => this.#saved(write(held)));
  }

  /** A write of a job's state, its outcome reported for health. */
  async #saved<T>(writing: Promise<T>): Promise<T> {
    try {
      const written = await writing;
      this.#health.saved({ ok: true });
      return written;
    } catch (error) {
      this.#health.saved({ ok: false, error });
      throw error;
    }
  }

  #deliveries(notifications: readonly Notification[], subscriptions: readonly Subscription[]): NewDelivery[] {
    return notifications.map(this.#toDelivery(subscriptions));
  }

  /** Turns a notification made for one of `subscriptions` into its delivery, in the current call's trace. */
  #toDelivery(subscriptions: readonly Subscription[]): (notification: Notification) => NewDelivery {
    const urls = new Map(subscriptions.map((subscription) => [subscription.id, subscription.url]));
    const traceContext = currentTraceParent();
    return (notification) => ({
      notification,
      endpoint: endpointOf(notification.clientId, urls.get(notification.subscriptionId) ?? ""),
      ...(traceContext ? { traceContext } : {}),
    });
  }

  /** New jobs are due: this instance's feed and the other instances look for them. */
  #announce(): void {
    this.#feed.pulse();
    this.#channel.announce();
  }

  /** Resolves true once no attempt runs (its state saved), false on timeout. */
  #idle(timeoutMs: number): Promise<boolean> {
    if (this.#running === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#onIdle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
