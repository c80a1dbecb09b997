import type { DeliveryAttempt, FinalStatus, Notification, Subscription } from "../domain/model.js";
import type { AcceptedPublish } from "../domain/ports.js";
import type { LockRequest, PassedOver } from "./fairness/budgets.js";
import type { LaneJob } from "./fairness/fair-lanes.js";

/** What an attempt reads: its notification and, while it exists, its subscription. */
export interface DeliveryRead {
  notification: Notification;
  subscription?: Subscription;
}

/** A notification to accept, with the endpoint its deliveries go to (domain/endpoint.ts). */
export interface NewDelivery {
  notification: Notification;
  endpoint: string;
  /** The W3C `traceparent` of the call that accepted it: its attempts' spans join that trace, wherever they run. */
  traceContext?: string;
  /** Set: the job goes in already locked by this instance, at this time (JobFeed.reserve). */
  lockedAt?: Date;
}

/** One publish's notifications, stored once per client and idempotency key (none: stored every time). */
export interface KeyedDeliveries {
  clientId: string;
  key?: string;
  deliveries: readonly NewDelivery[];
}

/** A job (one pending notification's next attempt; its id is the notification's) and the lock its holder took. */
export interface HeldJob {
  readonly id: string;
  readonly heldLock: Date;
}

/** A job this instance locked, with what its attempt reads, read in the same statement. */
export interface LockedJob extends LaneJob {
  readonly id: string;
  /** When this instance's lock was taken: a job is handed out only while its lock is fresh. */
  readonly lockedAt: Date;
  readonly traceContext?: string;
  /** The throttle slot the job waits for (fairness/throttle.ts); absent: it holds none. */
  readonly throttleSlotAt?: Date;
  /** Absent when the notification is gone. */
  readonly read?: DeliveryRead;
}

export interface LockedBatch {
  jobs: LockedJob[];
  /** No other job was due that this request could have taken. */
  drained: boolean;
  /** Endpoints and clients with due jobs their budget left in the store. */
  passedOver: PassedOver;
}

/** An attempt that ended its notification (delivered, or failed for good). */
export interface FinishedRun extends HeldJob {
  readonly attempt: DeliveryAttempt;
  readonly status: FinalStatus;
}

/** A failed attempt that leaves its notification pending, and when its retry is due. */
export interface RetriedRun extends HeldJob {
  readonly attempt: DeliveryAttempt;
  readonly nextRunAt: Date;
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
 * implementation per database, under store/). Accepting a notification and
 * queueing its first attempt are one write, so an accepted notification
 * always has a job until it is delivered or has failed for good. The job
 * store is the one writer of attempts: recording one and ending or
 * rescheduling its job are one write too.
 *
 * Every write about a held job is made only while the job still has the
 * lock its caller holds (`heldLock`), and answers whether it did: a run that
 * outlived its lock (another instance took the job over) changes nothing of
 * the job, though its attempt is still recorded.
 */
export interface JobStore {
  /** Creates what the store needs, and gives a job to every pending notification an older version left without one. */
  prepare(): Promise<void>;
  /** Stores the notifications, each with a job due now (unlocked, or locked by this instance where `lockedAt` is set), in one durable commit. */
  insert(deliveries: readonly NewDelivery[]): Promise<void>;
  /**
   * As `insert` (nothing locked), for several publishes in one durable commit,
   * each once per client and idempotency key where it has one: a repeated key
   * stores nothing and answers the ids the first call stored. The items'
   * (client, key) pairs are distinct; the answers come in the items' order.
   */
  insertBatch(items: readonly KeyedDeliveries[]): Promise<AcceptedPublish[]>;
  /**
   * Locks due jobs, and jobs whose holder's lock expired, oldest due first,
   * within the request's budgets (fairness/budgets.ts, withinBudgets).
   */
  lockDue(request: LockRequest): Promise<LockedBatch>;
  /** Hands locks back: the jobs are due again (as they were scheduled). */
  unlock(jobs: readonly HeldJob[]): Promise<void>;
  /** Moves the lock forward, changing nothing else. */
  renew(job: HeldJob, lockedAt: Date): Promise<boolean>;
  /** Records the attempt, moves its notification to its final status, and deletes the job. */
  finish(run: FinishedRun): Promise<boolean>;
  /** Records the failed attempt and schedules the retry, releasing the lock (and any throttle slot: a retry takes its own). */
  retry(run: RetriedRun): Promise<boolean>;
  /** Releases the lock with the job due at `nextRunAt` (an attempt interrupted, or failed on our side). */
  reschedule(job: HeldJob, nextRunAt: Date): Promise<boolean>;
  /**
   * Hands a waiting job of a throttled subscription its slot, shared by
   * every instance: the later of the subscription's next free slot and
   * `now`; the slot after it is `intervalMs` later.
   */
  takeSlot(subscriptionId: string, now: Date, intervalMs: number): Promise<Date>;
  /**
   * Lets a request of a throttled subscription go out now if its last one
   * went out at least `intervalMs` ago (undefined: go; the next may go
   * `intervalMs` from now); else answers the earliest it may go.
   */
  claimSend(subscriptionId: string, now: Date, intervalMs: number): Promise<Date | undefined>;
  /** Releases the lock with the job due at its throttle `slot`, which it keeps (`LockedJob.throttleSlotAt`); no attempt is recorded. */
  waitForSlot(job: HeldJob, slot: Date): Promise<boolean>;
  /** Deletes a job with nothing to deliver (its notification ended or is gone). */
  remove(job: HeldJob): Promise<boolean>;
  counts(): Promise<JobCounts>;
}
