import { Agenda, type AgendaBackend, type Job, type NotificationChannel } from "agenda";
import type { Logger } from "pino";
import type { DeliveryQueue, NotificationStore } from "../domain/ports.js";
import { type RetryPolicy, retryDelay } from "../domain/retry-policy.js";
import type { DeliveryWorker } from "./delivery-worker.js";

export const DELIVER_JOB = "deliver-notification";

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
}

/**
 * Agenda schedules every attempt: one job per notification, retried by
 * Agenda's backoff with the delays of the retry policy.
 */
export class DeliveryScheduler implements DeliveryQueue {
  readonly #agenda: Agenda;
  #sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: DeliverySchedulerOptions,
    private readonly deps: { worker: DeliveryWorker; notifications: NotificationStore; log: Logger },
  ) {
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
      ...(options.notificationChannel ? { notificationChannel: options.notificationChannel } : {}),
    });
    this.#agenda.on("error", (err) => deps.log.error({ err }, "scheduler error"));
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
    await Promise.all(notificationIds.map((notificationId) => this.#agenda.now<DeliverJobData>(DELIVER_JOB, { notificationId })));
    await this.deps.notifications.markScheduled(notificationIds);
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
   */
  async stop(drainTimeoutMs: number, interrupt: () => void): Promise<void> {
    clearInterval(this.#sweepTimer);
    const timer = setTimeout(interrupt, drainTimeoutMs);
    try {
      await this.#agenda.drain({ closeConnection: false });
    } finally {
      clearTimeout(timer);
    }
    await this.#agenda.stop(false);
  }
}
