import { context } from "@opentelemetry/api";
import { Agenda, type AgendaBackend, type Job, type NotificationChannel } from "agenda";
import type { Logger } from "pino";
import type { Notification, Subscription } from "../../domain/model.js";
import type { AcceptOptions, DeliveryQueue } from "../../domain/ports.js";
import { type RetryPolicy, retryDelay } from "../../domain/retry-policy.js";
import { contextOfTraceParent, currentTraceParent } from "../../observability/trace-context.js";
import { DeliveryHealth, type HealthReport } from "../delivery-health.js";
import type { DeliveryWorker } from "../delivery-worker.js";
import { EarnedConcurrency } from "../earned-concurrency.js";
import { endpointOf } from "../endpoint.js";
import type { LaneOccupancy } from "../fair-lanes.js";
import { JobFeed } from "../job-feed.js";
import type { JobSource } from "../job-source.js";
import { DELIVER_JOB, type DeliverJobData, DeliveryJobRepository } from "./delivery-job-repository.js";
import type { DeliveryJobStore, JobCounts, LockedJob, NewDelivery } from "./delivery-job-store.js";
import { patchJobProcessorOf } from "./job-processor-patch.js";
import { WakeChannel } from "./wake-channel.js";

export interface DeliveryEngineOptions {
  worker: DeliveryWorker;
  retryPolicy: RetryPolicy;
  /** Attempts running at once in this instance. */
  concurrency: number;
  /** Requests in flight this instance gives any one endpoint and any one client to begin with (see earned-concurrency.ts). */
  limits: { perEndpoint: number; perClient: number };
  /** How often Agenda looks for due jobs (retries falling due, other instances' jobs). */
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
/** A fetch that found nothing due vouches for the table this long (see JobFeed.reserve). */
const DRAINED_FOR_MS = 250;
/** A publish waits at most this long for a fetch (one in flight, or one it starts) to vouch for the table, so that its jobs go in locked (JobFeed.untilVouched). */
const VOUCH_WAIT_MS = 5;
/** While a backlog is read, one lock statement per this long at most takes what finished meanwhile. */
const FETCH_SPACING_MS = 20;
/** An attempt that failed on our side (the store unreachable…), not the receiver's, runs again this much later. */
const OWN_FAILURE_RETRY_MS = 10_000;
/** Retries this instance scheduled are fetched as they fall due, in steps of 20 ms; past 10,000 distinct times, by the poll. */
const RETRY_DUE = { stepMs: 20, maxPending: 10_000 };
/** After a failed poll, the next in 200 ms, doubling up to 5 s while failures go on. */
const POLL_BACKOFF = { initialMs: 200, maxMs: 5_000 };
/** Running attempts get this long to save their state once interrupted at shutdown. */
const INTERRUPTED_SAVE_WAIT_MS = 5_000;

/** The fan-out the job store is to check as it inserts (DeliveryJobStore.insert): none when the accept says not to. */
function toCheck(subscriptions: readonly Subscription[], options: AcceptOptions | undefined): readonly Subscription[] | undefined {
  return options?.check === false ? undefined : subscriptions;
}

/**
 * Thrown to Agenda for a run whose attempt failed and will be retried: the
 * retry was saved with the attempt's record (recordRetry), so Agenda's
 * backoff and save that follow write nothing (or, for a run that lost its
 * lock meanwhile, fail as the lock is gone).
 */
class RetryLater extends Error {
  constructor(
    message: string,
    readonly retry: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/**
 * The delivery engine: Agenda runs every attempt as a persisted job, fed
 * fairly by a JobFeed from the job store. The rest of the service sees the
 * DeliveryQueue port (accept), plus start, stop and health.
 */
export class AgendaDeliveryEngine implements DeliveryQueue {
  readonly #agenda: Agenda;
  readonly #feed: JobFeed<LockedJob>;
  readonly #repository: DeliveryJobRepository;
  readonly #channel: WakeChannel;
  readonly #health: DeliveryHealth;
  /** Attempts started and not yet saved by Agenda. */
  #running = 0;
  #onIdle: Array<() => void> = [];

  constructor(
    private readonly store: DeliveryJobStore,
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
    this.#feed = new JobFeed(this.#handingReadsToWorker(store), {
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
      fetchSpacingMs: FETCH_SPACING_MS,
      backoff: POLL_BACKOFF,
      due: RETRY_DUE,
      onRunnable: () => this.#channel.wake(),
      onFetched: (outcome) => {
        if (!outcome.ok) log.error({ err: outcome.error }, "polling for due deliveries failed; retrying");
        this.#health.polled(outcome);
      },
      onUnlockError: (err) => log.warn({ err }, "handing back job locks failed; they expire by themselves"),
    });
    this.#health = new DeliveryHealth({
      stallAfterMs: Math.max(5 * options.pollIntervalMs, 10_000),
      unservedMs: () => this.#feed.unservedMs(),
    });
    this.#repository = new DeliveryJobRepository(store, this.#feed, (outcome) => {
      if (!outcome.ok) log.error({ err: outcome.error }, "saving a job's state failed; its lock expires and it runs again");
      this.#health.saved(outcome);
    });
    const backend: AgendaBackend = {
      name: "webhook delivery jobs",
      repository: this.#repository,
      notificationChannel: this.#channel,
      ownsConnection: false,
      connect: async () => {},
      disconnect: async () => {},
    };
    this.#agenda = new Agenda({
      backend,
      name: options.name,
      processEvery: options.pollIntervalMs,
      maxConcurrency: options.concurrency,
      // Agenda takes only jobs it can start at once: the rest wait in the feed's fair lanes.
      lockLimit: options.concurrency,
      defaultConcurrency: options.concurrency,
      defaultLockLimit: options.concurrency,
      defaultLockLifetime: options.lockLifetimeMs,
      removeOnComplete: true,
    });
    patchJobProcessorOf(this.#agenda);
    this.#agenda.on("error", (err) => log.error({ err }, "scheduler error"));
    // "complete" fires once Agenda saved the job's state: only then may the store close.
    this.#agenda.on(`start:${DELIVER_JOB}`, () => this.#running++);
    this.#agenda.on(`complete:${DELIVER_JOB}`, () => {
      if (--this.#running === 0) for (const wake of this.#onIdle.splice(0)) wake();
      // A slot is free: Agenda takes more only on a poll or a wake-up.
      if (this.#feed.runnable) this.#channel.wake();
    });
    // Concurrency, lock limit and lifetime come from the defaults above.
    this.#agenda.define<DeliverJobData>(DELIVER_JOB, (job) => this.#run(job), {
      backoff: ({ error }) => {
        if (error instanceof RetryLater) return retryDelay(this.options.retryPolicy, error.retry, error.retryAfterMs);
        // Our own failure, not the receiver's: again soon, without spending one of the receiver's retries.
        return OWN_FAILURE_RETRY_MS;
      },
    });
  }

  async accept(notifications: readonly Notification[], subscriptions: readonly Subscription[], options?: AcceptOptions): Promise<void> {
    if (notifications.length === 0) return;
    const byId = new Map(subscriptions.map((subscription) => [subscription.id, subscription]));
    const deliveries = this.#deliveries(notifications, byId);
    // Going in unlocked now would cost an announcement and another fetch, and run no sooner.
    const vouched = this.#feed.untilVouched(VOUCH_WAIT_MS);
    if (vouched) await vouched;
    const locked = await this.store.insert(
      deliveries,
      (batch) => this.#feed.reserve(batch.map((delivery) => ({ endpoint: delivery.endpoint, clientId: delivery.notification.clientId }))),
      toCheck(subscriptions, options),
    );
    // The first attempt of a job run here uses the rows just written instead of reading them back.
    const byNotification = new Map(notifications.map((notification) => [notification.id, notification]));
    for (const job of locked) {
      const notification = byNotification.get(job.id);
      const subscription = notification && byId.get(notification.subscriptionId);
      if (notification && subscription) this.options.worker.expect(notification, subscription);
    }
    this.#feed.adopt(locked);
    if (locked.length < deliveries.length) this.#announce();
  }

  async acceptOnce(
    clientId: string,
    key: string,
    notifications: readonly Notification[],
    subscriptions: readonly Subscription[],
    options?: AcceptOptions,
  ): Promise<{ ids: string[]; duplicate: boolean }> {
    const byId = new Map(subscriptions.map((subscription) => [subscription.id, subscription]));
    const result = await this.store.insertOnce(clientId, key, this.#deliveries(notifications, byId), toCheck(subscriptions, options));
    if (!result.duplicate && notifications.length > 0) this.#announce();
    return result;
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
    const { notificationId } = job.attrs.data;
    const lease = this.#repository.leaseOf(job.attrs);
    let finished = false;
    // The endpoint's slot is free once its request is over; saving the outcome doesn't need it.
    // A run that made no request (nothing to deliver, the store failing) says nothing of the endpoint's speed.
    const requestDone = (answered: boolean) => {
      if (finished || !lease) return;
      finished = true;
      this.#feed.finish(lease, answered);
    };
    // An attempt outliving a third of its lock's lifetime (a slow store) renews the lock, so that no
    // other instance takes the job over while it runs.
    const renewal = setInterval(() => {
      job.touch().catch((err: unknown) => this.options.log.warn({ err, jobId: notificationId }, "renewing a job's lock failed"));
    }, this.options.lockLifetimeMs / 3);
    try {
      // The attempt joins the trace of the call that accepted its notification.
      const trace = contextOfTraceParent(lease?.traceContext);
      const outcome = await context.with(trace, () =>
        this.options.worker.attemptNext(notificationId, {
          requestDone: () => requestDone(true),
          // The last attempt's record also deletes the job: Agenda's save as the run ends then writes nothing.
          recordFinal: (attempt, status) =>
            this.#repository.finishRun(job.attrs, async (heldLock) => {
              const [deleted] = await this.store.finish([{ attempt, status, heldLock }]);
              return deleted === true;
            }),
          // A failed attempt's record also schedules its retry: Agenda's save as the run ends then writes nothing.
          recordRetry: (attempt, retry) => {
            const delayMs = retryDelay(this.options.retryPolicy, retry.retry, retry.retryAfterMs);
            // The worker asks for no retry beyond the policy's last.
            if (delayMs === null) return Promise.reject(new Error(`retry ${retry.retry} is beyond the retry policy`));
            const nextRunAt = new Date(Date.now() + delayMs);
            return this.#repository.retryRun(job.attrs, { nextRunAt, reason: retry.reason }, async (state) => {
              const [saved] = await this.store.retry([{ attempt, state }]);
              return saved === true;
            });
          },
        }),
      );
      if (outcome.kind === "retry") throw new RetryLater(outcome.reason, outcome.retry, outcome.retryAfterMs);
      // Agenda saves nextRunAt after the run: the same attempt runs again.
      if (outcome.kind === "requeue") job.attrs.nextRunAt = new Date();
    } finally {
      clearInterval(renewal);
      requestDone(false);
    }
  }

  /**
   * The store as the feed's source, each locked job's read (when the lock
   * statement brought it) handed to the worker, so that an attempt run soon
   * after does not read it again.
   */
  #handingReadsToWorker(store: DeliveryJobStore): JobSource<LockedJob> {
    return {
      lockDue: async (request) => {
        const batch = await store.lockDue(request);
        for (const job of batch.jobs) {
          // The read is as old as the lock (taken as the statement began), not as its answer.
          if (job.read?.subscription) this.options.worker.expect(job.read.notification, job.read.subscription, job.lockedAt.getTime());
          else this.options.worker.unexpect(job.id);
        }
        return batch;
      },
      unlock: (jobs) => store.unlock(jobs),
    };
  }

  #deliveries(notifications: readonly Notification[], subscriptions: ReadonlyMap<string, Subscription>): NewDelivery[] {
    const traceContext = currentTraceParent();
    return notifications.map((notification) => ({
      notification,
      endpoint: endpointOf(notification.clientId, subscriptions.get(notification.subscriptionId)?.url ?? ""),
      ...(traceContext ? { traceContext } : {}),
    }));
  }

  /** Jobs went in unlocked: this instance's feed and the other instances look for them. */
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
