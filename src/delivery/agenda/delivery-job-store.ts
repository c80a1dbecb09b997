import type { DeliveryAttempt, FinalStatus, Notification, Subscription } from "../../domain/model.js";
import type { DeliveryRead } from "../../domain/ports.js";
import type { FeedJob, JobSource } from "../job-source.js";

/**
 * One notification's job, as Agenda keeps it: when its next attempt is
 * due, who holds it, and how its runs went. Its id is the notification's
 * (the `X-JobId` receivers see).
 */
export interface StoredJob {
  readonly id: string;
  /** See endpoint.ts. */
  readonly endpoint: string;
  readonly clientId: string;
  /** When the next run is due; null: none is scheduled. */
  nextRunAt: Date | null;
  lockedAt?: Date;
  lastModifiedBy?: string;
  lastRunAt?: Date;
  lastFinishedAt?: Date;
  failCount?: number;
  failReason?: string;
  failedAt?: Date;
  /**
   * The W3C `traceparent` of the call that accepted the notification: its
   * attempts' spans join that trace, on whichever instance and after
   * whatever restart they run.
   */
  traceContext?: string;
}

/**
 * A job this instance holds the lock of; as a lock hands it out, with what
 * its attempt reads (its notification and subscription) where the store
 * could read it in the same statement.
 */
export type LockedJob = StoredJob & FeedJob & { lockedAt: Date; readonly read?: DeliveryRead };

/**
 * What a run of a job writes as it ends with a next run due (a retry, or
 * the same attempt again after an interrupted one): its schedule and how it
 * went, releasing its lock. Written only while the job still has
 * `heldLock`: a run that outlived its lock (another instance took the job
 * over) changes nothing.
 */
export interface JobState {
  readonly id: string;
  readonly heldLock: Date;
  nextRunAt: Date;
  lastRunAt?: Date;
  lastFinishedAt?: Date;
  failCount?: number;
  failReason?: string;
  failedAt?: Date;
}

/** A lock a run holds (`heldLock`), to be moved to `lockedAt`. */
export interface LockRenewal {
  readonly id: string;
  readonly heldLock: Date;
  readonly lockedAt: Date;
}

/**
 * A run's last attempt, which ended its notification (delivered, or failed
 * for good), and the lock the run holds on its job.
 */
export interface FinishedRun {
  readonly attempt: DeliveryAttempt;
  readonly status: FinalStatus;
  readonly heldLock: Date;
}

/**
 * A run's failed attempt, which leaves its notification pending, and the
 * state its job is saved with: its retry due, its lock released.
 */
export interface RetriedRun {
  readonly attempt: DeliveryAttempt;
  readonly state: JobState;
}

/** A notification to accept, with the endpoint its deliveries go to. */
export interface NewDelivery {
  notification: Notification;
  endpoint: string;
  /** See StoredJob.traceContext. */
  traceContext?: string;
}

/**
 * Counts for status reports and metrics: jobs due now and unlocked, due
 * later, and locked by someone; and when the longest-waiting due job fell
 * due (null: none is due). Read through indexes, never the whole table.
 */
export interface JobCounts {
  due: number;
  scheduled: number;
  locked: number;
  oldestDueAt: Date | null;
}

/**
 * Where delivery jobs live, next to the notifications they deliver (one
 * implementation per database). Accepting a notification and queueing its
 * first attempt are one write, so an accepted notification always has a
 * job until it is delivered or has failed for good.
 */
export interface DeliveryJobStore extends JobSource<LockedJob> {
  /** Creates what the store needs (tables, indexes), and takes over jobs an older version left behind. */
  prepare(): Promise<void>;
  /**
   * Stores the notifications, each with a job due now, in one durable
   * commit. `lockFor`, asked once as the write goes out with every job it
   * carries (concurrent calls share one write), answers which to insert
   * already locked for this instance; those are returned. `fanOut`: the
   * subscriptions the notifications were made for (none: not checked). A store that checks
   * fan-outs (PostgreSQL shared by instances) stores nothing and rejects
   * with FanOutChangedError when they are no longer, as read, the enabled
   * subscriptions of their client and event (see DeliveryQueue).
   */
  insert(
    deliveries: readonly NewDelivery[],
    lockFor: (deliveries: readonly NewDelivery[]) => boolean[],
    fanOut?: readonly Subscription[],
  ): Promise<LockedJob[]>;
  /**
   * As `insert` (nothing locked), once per client and idempotency key: a
   * repeated key stores nothing and answers the ids the first call stored.
   */
  insertOnce(
    clientId: string,
    key: string,
    deliveries: readonly NewDelivery[],
    fanOut?: readonly Subscription[],
  ): Promise<{ ids: string[]; duplicate: boolean }>;
  /**
   * Moves each lock forward, changing nothing else (a run's schedule stays
   * as stored until it ends); answers, per job, whether it still had its
   * held lock (and was renewed).
   */
  renew(renewals: readonly LockRenewal[]): Promise<boolean[]>;
  /** Writes each ended run's state and releases its lock; answers, per job, whether it still had its held lock (and was written). */
  save(states: readonly JobState[]): Promise<boolean[]>;
  /**
   * Records each run's last attempt and moves its notification to its
   * final status, as NotificationStore.recordAttempt does, and deletes its
   * job where the job still has the held lock, in one write where the
   * database allows; answers, per run, whether the job was deleted. A run
   * that lost its lock (another instance took the job over) still records
   * its attempt, and leaves the job to its new holder.
   */
  finish(runs: readonly FinishedRun[]): Promise<boolean[]>;
  /**
   * Records each run's failed attempt, as NotificationStore.recordAttempt
   * does (its notification stays pending), and writes its job's state as
   * `save` does, in one write where the database allows; answers, per run,
   * whether the job still had its held lock (and was written). A run that
   * lost its lock still records its attempt.
   */
  retry(runs: readonly RetriedRun[]): Promise<boolean[]>;
  /** Deletes the jobs that still have their held lock; answers their ids. */
  remove(jobs: ReadonlyArray<{ id: string; heldLock: Date }>): Promise<string[]>;
  get(id: string): Promise<StoredJob | undefined>;
  counts(): Promise<JobCounts>;
}
