import {
  Agenda,
  type AgendaBackend,
  InMemoryNotificationChannel,
  type Job,
  type JobId,
  type JobNotification,
  type JobRepository,
  type NotificationChannel,
} from "agenda";
import type { Logger } from "pino";
import type { Notification, Subscription } from "../domain/model.js";
import type { DeliveryQueue, NotificationStore } from "../domain/ports.js";
import { type RetryPolicy, retryDelay } from "../domain/retry-policy.js";
import { searchQueueInPlace } from "./agenda-queue.js";
import type { DeliveryWorker } from "./delivery-worker.js";
import { type BatchingRepository, type BulkJobOperations, batchJobs, type QueuedInsert, withOverrides } from "./job-batching.js";

export const DELIVER_JOB = "deliver-notification";
const INTERRUPTED_SAVE_WAIT_MS = 5_000;
/** A delivered (or given up) notification's job is deleted; the notification keeps the history. */
const REMOVE_ON_COMPLETE = true;

interface DeliverJobData {
  notificationId: string;
}

/** Thrown to Agenda so that it schedules the next attempt through `backoff`. */
class RetryLater extends Error {
  constructor(
    message: string,
    readonly retry: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface DeliverySchedulerOptions {
  backend: AgendaBackend;
  /** Overrides the backend's channel (e.g. in-process for embedded PGlite). */
  notificationChannel?: NotificationChannel;
  retryPolicy: RetryPolicy;
  pollIntervalMs: number;
  concurrency: number;
  /** Longer than the delivery timeout plus margin, so no attempt runs twice. */
  lockLifetimeMs: number;
  /** How often accepted-but-unqueued notifications are looked for. */
  sweepIntervalMs: number;
  name: string;
  /** Where the store can claim notifications and insert their jobs in one statement (PostgreSQL). */
  scheduleDeliveries?: (notificationIds: readonly string[], jobName: string, lastModifiedBy: string) => Promise<string | undefined>;
  /**
   * Where the store can insert notifications and their jobs in one durable
   * statement (PostgreSQL); the first `lockUpTo()` jobs, asked as the
   * statement goes out, are inserted locked for this instance.
   */
  insertQueued?: (notifications: Notification[], jobName: string, lastModifiedBy: string, lockUpTo?: () => number) => Promise<QueuedInsert>;
  /** Where the backend can lock, save and delete many jobs per statement (PostgreSQL). */
  bulkJobs?: BulkJobOperations;
}

/**
 * Agenda schedules every attempt: one job per notification, retried by
 * Agenda's backoff with the delays of the retry policy.
 */
export class DeliveryScheduler implements DeliveryQueue {
  readonly #agenda: Agenda;
  readonly #channel: NotificationChannel | undefined;
  readonly #batching: BatchingRepository | undefined;
  /** Agenda's handler for "jobs are due", called directly for this process's own wake-ups. */
  #fill: ((notification: JobNotification) => unknown) | undefined;
  #wakePending = false;
  /** A NOTIFY to other instances is on its way; `#tellNext` is the job to announce after it. */
  #telling = false;
  #tellNext: string | undefined;
  /** The last lock found a job, so more may be due than Agenda's lock limit let it take. */
  #moreDue = false;
  #sweepTimer: NodeJS.Timeout | undefined;
  #stopping = false;
  /** Attempts started and not yet saved by Agenda. */
  #running = 0;
  #onIdle: Array<() => void> = [];
  /** Present where the store has `insertQueued` (see DeliveryQueue). */
  readonly insertQueued?: (notifications: Notification[], subscriptions?: readonly Subscription[]) => Promise<void>;

  constructor(
    private readonly options: DeliverySchedulerOptions,
    private readonly deps: { worker: DeliveryWorker; notifications: NotificationStore; log: Logger },
  ) {
    const { insertQueued } = options;
    if (insertQueued) {
      this.insertQueued = async (notifications, subscriptions) => {
        // New jobs go straight to this instance's line while it keeps up: no round trip to lock them.
        const lockUpTo = () => (this.#stopping ? 0 : (this.#batching?.room(DELIVER_JOB) ?? 0));
        const { jobId, locked } = await insertQueued(notifications, DELIVER_JOB, options.name, lockUpTo);
        // Jobs inserted unlocked may be taken by any instance; those inserted locked are this one's alone.
        const someUnlocked = locked.length < notifications.length;
        if (someUnlocked) this.#batching?.stale(DELIVER_JOB);
        // What the first attempt of a job run at once reads is in hand: the rows just written.
        if (subscriptions && locked.length > 0) {
          const byId = new Map(subscriptions.map((subscription) => [subscription.id, subscription]));
          const byNotification = new Map(notifications.map((notification) => [notification.id, notification]));
          for (const job of locked) {
            const notification = byNotification.get((job.data as DeliverJobData).notificationId);
            const subscription = notification && byId.get(notification.subscriptionId);
            if (notification && subscription) deps.worker.expect(notification, subscription);
          }
        }
        this.#batching?.adopt(locked);
        // Other instances are told only of jobs they may take.
        this.#announce(jobId, someUnlocked);
      };
    }
    const channel = options.notificationChannel ?? options.backend.notificationChannel;
    this.#channel = channel && this.#wakeupsOnly(channel);
    this.#agenda = new Agenda({
      backend: options.backend,
      name: options.name,
      processEvery: options.pollIntervalMs,
      maxConcurrency: options.concurrency,
      defaultConcurrency: options.concurrency,
      lockLimit: options.concurrency * 2,
      defaultLockLimit: options.concurrency * 2,
      defaultLockLifetime: options.lockLifetimeMs,
      removeOnComplete: REMOVE_ON_COMPLETE,
      ...(this.#channel ? { notificationChannel: this.#channel } : {}),
    });
    const onUnlockError = (err: unknown) => deps.log.warn({ err }, "releasing a job lock failed; it expires by itself");
    this.#batching =
      options.bulkJobs &&
      batchJobs(this.#agenda.db, options.bulkJobs, {
        lockBatch: options.concurrency,
        removeOnComplete: REMOVE_ON_COMPLETE,
        // Nothing reads a delivery job's lastRunAt; the attempt record has the start time.
        skipStartSave: true,
        onMoreLocked: () => {
          this.#moreDue = true;
          this.#wake();
        },
        onError: (err) => deps.log.warn({ err }, "locking jobs ahead failed; locks expire by themselves and the poll finds due jobs"),
      });
    this.#agenda.db = guardLocks(
      this.#batching?.repository ?? this.#agenda.db,
      () => this.#stopping,
      (found) => {
        this.#moreDue = found;
      },
      onUnlockError,
    );
    this.#agenda.on("error", (err) => deps.log.error({ err }, "scheduler error"));
    // "complete" fires after Agenda saved the job's state: only then may the pool close.
    this.#agenda.on(`start:${DELIVER_JOB}`, () => this.#running++);
    this.#agenda.on(`complete:${DELIVER_JOB}`, () => {
      if (--this.#running === 0) for (const wake of this.#onIdle.splice(0)) wake();
      // Agenda refills its queue only on a poll or a wake-up: with a backlog,
      // a finished job is the moment to take the next ones.
      if (this.#moreDue) this.#wake();
    });
    this.#agenda.define<DeliverJobData>(DELIVER_JOB, (job) => this.#run(job), {
      concurrency: options.concurrency,
      lockLimit: options.concurrency * 2,
      lockLifetime: options.lockLifetimeMs,
      backoff: ({ error, attempt }) => {
        if (error instanceof RetryLater) return retryDelay(this.options.retryPolicy, error.retry, error.retryAfterMs);
        // Our own failure (store unreachable…), not the receiver's: try again
        // soon, without spending one of the receiver's retries.
        return Math.min(1000 * 2 ** attempt, 300_000);
      },
    });
  }

  async #run(job: Job<DeliverJobData>): Promise<void> {
    const { notificationId } = job.attrs.data;
    const outcome = await this.deps.worker.attemptNext(notificationId);
    if (outcome.kind === "retry") throw new RetryLater(outcome.reason, outcome.retry, outcome.retryAfterMs);
    // Agenda saves nextRunAt after the run: the same attempt is picked up again.
    if (outcome.kind === "requeue") job.attrs.nextRunAt = new Date();
  }

  async start(): Promise<void> {
    await this.#agenda.start();
    searchQueueInPlace(this.#agenda);
    await this.sweep();
    this.#sweepTimer = setInterval(() => {
      this.sweep().catch((err) => this.deps.log.error({ err }, "sweep failed"));
    }, this.options.sweepIntervalMs);
    this.#sweepTimer.unref();
  }

  async enqueue(notificationIds: string[]): Promise<void> {
    const { scheduleDeliveries, name } = this.options;
    if (!scheduleDeliveries) {
      await Promise.all(notificationIds.map((notificationId) => this.#agenda.now<DeliverJobData>(DELIVER_JOB, { notificationId })));
      await this.deps.notifications.markScheduled(notificationIds);
      this.#wake();
      return;
    }
    const jobId = await scheduleDeliveries(notificationIds, DELIVER_JOB, name);
    // Queued unlocked: the next fill looks in the table.
    if (jobId !== undefined) this.#batching?.stale(DELIVER_JOB);
    this.#announce(jobId);
  }

  /** New jobs are due: wakes this scheduler, and tells other instances on the same database if they may take some. */
  #announce(jobId: string | undefined, forOthers = true): void {
    if (jobId === undefined) return;
    this.#wake();
    if (forOthers) this.#tellOthers(jobId);
  }

  /**
   * Other instances hear of new jobs through one NOTIFY at a time: jobs
   * announced while one is on its way share the next (a wake-up says "jobs
   * are due", whichever). Best effort, not awaited: their poll finds the
   * jobs anyway, and a publish need not wait for it.
   */
  #tellOthers(jobId: string): void {
    const channel = this.#channel;
    if (channel?.state !== "connected" || channel instanceof InMemoryNotificationChannel) return;
    if (this.#telling) {
      this.#tellNext = jobId;
      return;
    }
    this.#telling = true;
    void (async () => {
      for (let next: string | undefined = jobId; next !== undefined && !this.#stopping; next = this.#tellNext) {
        this.#tellNext = undefined;
        await channel
          // No nextRunAt, as in #wake.
          .publish({
            jobId: next as unknown as JobId,
            jobName: DELIVER_JOB,
            nextRunAt: null,
            priority: 0,
            timestamp: new Date(),
            source: this.options.name,
          })
          .catch((err: unknown) => this.deps.log.warn({ err }, "wake-up failed; the poll will find the jobs"));
      }
      this.#telling = false;
    })();
  }

  /** Lets Agenda look for due jobs now, once per turn of the event loop. */
  #wake(): void {
    if (this.#wakePending || this.#stopping) return;
    this.#wakePending = true;
    setImmediate(() => {
      this.#wakePending = false;
      const now = new Date();
      // No nextRunAt: Agenda skips a wake-up due after its next scan, and that
      // scan time stands still while its lock limit is reached.
      const notification = { jobId: "" as unknown as JobId, jobName: DELIVER_JOB, nextRunAt: null, priority: 0, timestamp: now };
      Promise.resolve(this.#fill?.(notification)).catch((err: unknown) => this.deps.log.warn({ err }, "waking the scheduler failed"));
    });
  }

  /**
   * The channel for "a job is due" wake-ups only. Agenda would also publish
   * every job's start/success/complete through it (three NOTIFY round trips
   * per delivery on PostgreSQL) for listeners we don't have. This process
   * wakes its own scheduler directly (#wake), so its own wake-ups coming
   * back through the database are ignored.
   */
  #wakeupsOnly(channel: NotificationChannel): NotificationChannel {
    const { name } = this.options;
    const subscribe: NotificationChannel["subscribe"] = (handler) => {
      this.#fill = handler;
      const unsubscribe = channel.subscribe((notification) => {
        if (notification.source === name) return undefined;
        // Another instance's jobs: the next fill looks in the table.
        this.#batching?.stale(notification.jobName);
        return handler(notification);
      });
      return () => {
        this.#fill = undefined;
        unsubscribe();
      };
    };
    return withOverrides(channel, { subscribe, publishState: undefined, subscribeState: undefined });
  }

  /** Queues notifications accepted before a crash cut them off from the scheduler. */
  async sweep(): Promise<number> {
    const cutoff = new Date(Date.now() - Math.min(this.options.sweepIntervalMs, 30_000));
    const ids = await this.deps.notifications.listUnscheduled(cutoff, 1000);
    if (ids.length > 0) {
      this.deps.log.warn({ count: ids.length }, "queueing notifications that were accepted but never scheduled");
      await this.enqueue(ids);
    }
    return ids.length;
  }

  /**
   * Stops taking jobs and waits for running attempts. When `drainTimeoutMs`
   * passes, `interrupt` aborts the rest; they are re-queued, not lost.
   *
   * Agenda's own drain() leaves jobs it had locked ahead of time locked for a
   * whole lock lifetime, and a queue fill in flight can lock jobs after
   * stop() released them. So: refuse new locks first (see #guardLocks), let
   * stop() release the queued ones, then wait for running jobs to be saved.
   */
  async stop(drainTimeoutMs: number, interrupt: () => void): Promise<void> {
    clearInterval(this.#sweepTimer);
    this.#stopping = true;
    await this.#agenda.stop(false);
    await this.#batching
      ?.release()
      .catch((err: unknown) => this.deps.log.warn({ err }, "releasing job locks failed; they expire by themselves"));
    if (!(await this.#idle(drainTimeoutMs))) {
      interrupt();
      await this.#idle(INTERRUPTED_SAVE_WAIT_MS);
    }
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

/**
 * The job repository, refusing to lock jobs once stopping: a lock taken by a
 * fill that raced the stop is handed straight back.
 */
function guardLocks(
  repository: JobRepository,
  isStopping: () => boolean,
  onLockResult: (found: boolean) => void,
  onError: (error: unknown) => void,
): JobRepository {
  const getNextJobToRun: JobRepository["getNextJobToRun"] = async (...args) => {
    if (isStopping()) return undefined;
    const job = await repository.getNextJobToRun(...args);
    onLockResult(job !== undefined);
    if (job?._id !== undefined && isStopping()) {
      await repository.unlockJobs([job._id]);
      return undefined;
    }
    return job;
  };
  // Agenda calls these without awaiting them; a rejection would end the process.
  const unlockJob: JobRepository["unlockJob"] = (job) => repository.unlockJob(job).catch((err: unknown) => onError(err));
  const unlockJobs: JobRepository["unlockJobs"] = (ids) => repository.unlockJobs(ids).catch((err: unknown) => onError(err));
  return withOverrides(repository, { getNextJobToRun, unlockJob, unlockJobs });
}
