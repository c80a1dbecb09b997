import { Agenda, type AgendaBackend, type Job, type JobId, type JobRepository, type NotificationChannel } from "agenda";
import type { Logger } from "pino";
import type { DeliveryQueue, NotificationStore } from "../domain/ports.js";
import { type RetryPolicy, retryDelay } from "../domain/retry-policy.js";
import type { DeliveryWorker } from "./delivery-worker.js";

export const DELIVER_JOB = "deliver-notification";
const INTERRUPTED_SAVE_WAIT_MS = 5_000;
const PARALLEL_WAKEUPS = 4;

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
  scheduleDeliveries?: (notificationIds: readonly string[], jobName: string, lastModifiedBy: string) => Promise<string[]>;
}

/**
 * Agenda schedules every attempt: one job per notification, retried by
 * Agenda's backoff with the delays of the retry policy.
 */
export class DeliveryScheduler implements DeliveryQueue {
  readonly #agenda: Agenda;
  readonly #channel: NotificationChannel | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #stopping = false;
  /** Attempts started and not yet saved by Agenda. */
  #running = 0;
  #onIdle: Array<() => void> = [];

  constructor(
    private readonly options: DeliverySchedulerOptions,
    private readonly deps: { worker: DeliveryWorker; notifications: NotificationStore; log: Logger },
  ) {
    this.#channel = wakeupsOnly(options.notificationChannel ?? options.backend.notificationChannel).notificationChannel;
    this.#agenda = new Agenda({
      backend: options.backend,
      name: options.name,
      processEvery: options.pollIntervalMs,
      maxConcurrency: options.concurrency,
      defaultConcurrency: options.concurrency,
      lockLimit: options.concurrency * 2,
      defaultLockLimit: options.concurrency * 2,
      defaultLockLifetime: options.lockLifetimeMs,
      removeOnComplete: true,
      ...(this.#channel ? { notificationChannel: this.#channel } : {}),
    });
    this.#agenda.db = guardLocks(
      this.#agenda.db,
      () => this.#stopping,
      (err) => deps.log.warn({ err }, "releasing a job lock failed; it expires by itself"),
    );
    this.#agenda.on("error", (err) => deps.log.error({ err }, "scheduler error"));
    // "complete" fires after Agenda saved the job's state: only then may the pool close.
    this.#agenda.on(`start:${DELIVER_JOB}`, () => this.#running++);
    this.#agenda.on(`complete:${DELIVER_JOB}`, () => {
      if (--this.#running === 0) for (const wake of this.#onIdle.splice(0)) wake();
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
      return;
    }
    const jobIds = await scheduleDeliveries(notificationIds, DELIVER_JOB, name);
    // Agenda locks jobs one round trip at a time per wake-up; a few wake-ups
    // per batch let a few lock chains run side by side. Best effort: the poll
    // finds the jobs anyway.
    if (this.#channel?.state !== "connected") return;
    const now = new Date();
    await Promise.all(
      jobIds
        .slice(0, PARALLEL_WAKEUPS)
        .map((id) =>
          this.#channel
            ?.publish({ jobId: id as unknown as JobId, jobName: DELIVER_JOB, nextRunAt: now, priority: 0, timestamp: now, source: name })
            .catch((err: unknown) => this.deps.log.warn({ err }, "wake-up failed; the poll will find the jobs")),
        ),
    );
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
function guardLocks(repository: JobRepository, isStopping: () => boolean, onError: (error: unknown) => void): JobRepository {
  const getNextJobToRun: JobRepository["getNextJobToRun"] = async (...args) => {
    if (isStopping()) return undefined;
    const job = await repository.getNextJobToRun(...args);
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

/**
 * The channel for "a job is due" wake-ups only. Agenda would also publish
 * every job's start/success/complete through it (three NOTIFY round trips
 * per delivery on PostgreSQL) for listeners we don't have.
 */
function wakeupsOnly(channel: NotificationChannel | undefined): { notificationChannel?: NotificationChannel } {
  if (!channel) return {};
  return { notificationChannel: withOverrides(channel, { publishState: undefined, subscribeState: undefined }) };
}

/**
 * `target` with some members replaced; everything else is the target's own,
 * methods bound to it (the backend keeps sharing state with the original).
 */
function withOverrides<T extends object>(target: T, overrides: { [K in keyof T]?: T[K] | undefined }): T {
  return new Proxy(target, {
    get(object, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof T];
      const value = Reflect.get(object, property, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}
