import {
  computeJobState,
  type JobId,
  type JobParameters,
  type JobRepository,
  type JobRepositoryOptions,
  type JobsOverview,
  type JobsQueryOptions,
  type JobsResult,
  type RemoveJobsOptions,
  toJobId,
} from "agenda";
import type { JobFeed } from "../job-feed.js";
import type { DeliveryJobStore, JobState, LockedJob, StoredJob } from "./delivery-job-store.js";

/** The one job this service defines: the next attempt of one notification. */
export const DELIVER_JOB = "deliver-notification";

export interface DeliverJobData {
  notificationId: string;
}

/** A job as Agenda sees it. */
export function toParameters(job: StoredJob): JobParameters<DeliverJobData> {
  return {
    _id: toJobId(job.id),
    name: DELIVER_JOB,
    priority: 0,
    nextRunAt: job.nextRunAt,
    type: "normal",
    data: { notificationId: job.id },
    disabled: false,
    ...(job.lockedAt ? { lockedAt: job.lockedAt } : {}),
    ...(job.lastModifiedBy ? { lastModifiedBy: job.lastModifiedBy } : {}),
    ...(job.lastRunAt ? { lastRunAt: job.lastRunAt } : {}),
    ...(job.lastFinishedAt ? { lastFinishedAt: job.lastFinishedAt } : {}),
    ...(job.failCount ? { failCount: job.failCount } : {}),
    ...(job.failReason !== undefined ? { failReason: job.failReason } : {}),
    ...(job.failedAt ? { failedAt: job.failedAt } : {}),
  };
}

/** What a run that ends with a next run due writes of its job's attributes, under the lock it held. */
function toState(attrs: JobParameters, heldLock: Date, nextRunAt: Date): JobState {
  return {
    id: String(attrs._id),
    heldLock,
    nextRunAt,
    ...(attrs.lastRunAt ? { lastRunAt: attrs.lastRunAt } : {}),
    ...(attrs.lastFinishedAt ? { lastFinishedAt: attrs.lastFinishedAt } : {}),
    ...(attrs.failCount !== undefined ? { failCount: attrs.failCount } : {}),
    ...(attrs.failReason !== undefined ? { failReason: attrs.failReason } : {}),
    ...(attrs.failedAt ? { failedAt: attrs.failedAt } : {}),
  };
}

class NotSupportedError extends Error {
  constructor(what: string) {
    super(`the delivery job repository does not ${what}: delivery jobs are created by accepting notifications`);
  }
}

/** Ids deleted by their final save, for the delete Agenda sends right after; bounded should one never come. */
const DELETED_ON_SAVE_LIMIT = 100_000;

/**
 * Agenda's JobRepository for delivery jobs: Agenda locks, runs, retries
 * (its backoff) and saves every attempt through it.
 *
 * - Locking hands out jobs the feed (job-feed.ts) locked ahead, fairly and
 *   only while their endpoint has a free slot, so Agenda only ever holds
 *   jobs it can start at once.
 * - Each run holds a lease: the lock it was handed out under, bound to the
 *   run's own job object at its first save. Every write of the run is
 *   conditional on the job still having that lock, so a run that outlived
 *   its lock (another instance took the job over) changes nothing, and two
 *   runs of one job never overwrite each other's state.
 * - A run's writes go out one after the other, each under the lock the one
 *   before left: the save ending a run waits for a renewal still in flight,
 *   and holds the renewed lock if it went through.
 * - A save that keeps the lock the run holds (Agenda's save as a run
 *   starts) stays in memory: while the lock lives nobody else reads the job,
 *   and a crash brings it back through lock expiry whatever was written.
 * - A renewal (Agenda's touch) moves the lock and nothing else: the run's
 *   schedule, which Agenda clears while the run is under way, stays as
 *   stored until the run ends. A renewal that fails leaves the run under
 *   its old lock, in memory too.
 * - It keeps no finished job: a save that releases a job with no next run
 *   deletes it (what Agenda's removeOnComplete does a moment later), and that
 *   delete then answers from memory.
 * - A run may write its own end with its attempt's record: `finishRun`
 *   deletes the job of a notification that ended, `retryRun` schedules the
 *   retry of one that goes on. Agenda's save as the run ends then writes
 *   nothing.
 * - Only what Agenda's job processing uses is supported; creating and
 *   editing jobs through Agenda's API is refused (NotSupportedError).
 */
export class DeliveryJobRepository implements JobRepository {
  /** Jobs handed to Agenda that have not started yet, by id. */
  readonly #handedOut = new Map<string, LockedJob>();
  /** The lease of each run under way, by the run's own job attributes (the object Agenda saves it by). */
  readonly #leases = new WeakMap<JobParameters, LockedJob>();
  readonly #deletedOnSave = new Set<string>();
  /** The last write asked for of each run under way, for the next to wait for. */
  readonly #writing = new WeakMap<JobParameters, Promise<unknown>>();
  /** Runs that wrote their own end: their job deleted (`finishRun`) or its retry saved (`retryRun`). */
  readonly #ended = new WeakMap<JobParameters, "deleted" | "saved">();

  constructor(
    private readonly store: DeliveryJobStore,
    private readonly feed: JobFeed<LockedJob>,
    /** How each write of a job's state went, for health (Agenda swallows a failed final save). */
    private readonly onWrite: (outcome: { ok: true } | { ok: false; error: unknown }) => void,
  ) {}

  /** The lease a run holds, once it has started (Agenda saves a run before running it). */
  leaseOf(attrs: JobParameters): LockedJob | undefined {
    return this.#leases.get(attrs);
  }

  async connect(): Promise<void> {}

  async getNextJobToRun(name: string): Promise<JobParameters | undefined> {
    if (name !== DELIVER_JOB) return undefined;
    const job = this.feed.take();
    if (!job) return undefined;
    this.#handedOut.set(job.id, job);
    return toParameters(job);
  }

  /** Agenda hands a job back when its lock limit filled while it was being fetched: it goes back to its line. */
  async unlockJob(job: JobParameters): Promise<void> {
    this.#putBack(String(job._id));
  }

  /** Agenda's stop hands back the jobs it locked and did not start. */
  async unlockJobs(ids: (JobId | string)[]): Promise<void> {
    for (const id of ids) this.#putBack(String(id));
  }

  saveJobState(attrs: JobParameters, _options?: JobRepositoryOptions): Promise<void> {
    const id = String(attrs._id);
    const lease = this.#leases.get(attrs) ?? this.#start(attrs);
    if (!lease) return Promise.reject(new NotSupportedError(`save job ${id}, which this instance does not hold`));
    // What Agenda asks for now: by the time an earlier write of this run is through, it may have moved on.
    const lockedAt = attrs.lockedAt;
    const nextRunAt = attrs.nextRunAt;
    const earlier = this.#writing.get(attrs);
    // The save a run starts with keeps the lock it holds: nothing to write, nothing to wait for.
    if (!earlier && lockedAt?.getTime() === lease.lockedAt.getTime()) return Promise.resolve();
    const write = (earlier ? earlier.catch(() => {}) : Promise.resolve()).then(() => this.#save(attrs, lockedAt, nextRunAt));
    this.#writing.set(attrs, write);
    return write;
  }

  /**
   * A run's last write of its own, made while it runs: `write` records its
   * last attempt and deletes its job under the lock the run holds (passed to
   * it), answering whether it deleted it (see DeliveryJobStore.finish). Its
   * failure is the attempt record's (the run fails, and Agenda saves it to
   * run again), not a job save's: it is not reported as one. See #ownWrite.
   */
  finishRun(attrs: JobParameters, write: (heldLock: Date) => Promise<boolean>): Promise<void> {
    return this.#ownWrite(attrs, async (lease) => {
      if (await write(lease.lockedAt)) this.#ended.set(attrs, "deleted");
    });
  }

  /**
   * As finishRun, for a run whose failed attempt leaves its notification
   * pending: `write` records the attempt and saves the job's state (passed
   * to it: the retry due at `nextRunAt`, the failure counted as Agenda
   * counts it, the lock released), answering whether the job still had the
   * lock (see DeliveryJobStore.retry). Agenda's own backoff and save that
   * follow write nothing.
   */
  retryRun(attrs: JobParameters, retry: { nextRunAt: Date; reason: string }, write: (state: JobState) => Promise<boolean>): Promise<void> {
    return this.#ownWrite(attrs, async (lease) => {
      const now = new Date();
      const failed = { ...attrs, failCount: (attrs.failCount ?? 0) + 1, failReason: retry.reason, failedAt: now, lastFinishedAt: now };
      // It is a save of the job's state too: its outcome counts for health as Agenda's would.
      if (!(await this.#write(write(toState(failed, lease.lockedAt, retry.nextRunAt))))) return;
      this.#ended.set(attrs, "saved");
      this.feed.dueAt(retry.nextRunAt);
    });
  }

  /**
   * A write a run makes of its own: it goes out after the run's earlier
   * writes, under the lock they left; once it ended the run's job (deleted
   * it, or saved its retry and released its lock), the run's later saves (a
   * renewal, the save Agenda makes as the run ends) write nothing.
   */
  #ownWrite(attrs: JobParameters, write: (lease: LockedJob) => Promise<void>): Promise<void> {
    const earlier = this.#writing.get(attrs);
    const writing = (earlier ? earlier.catch(() => {}) : Promise.resolve()).then(() => {
      const lease = this.#leases.get(attrs);
      if (!lease) throw new Error(`job ${String(attrs._id)} wrote its end after its run ended`);
      return write(lease);
    });
    this.#writing.set(attrs, writing);
    return writing;
  }

  /** One write of a run, once its earlier ones are through. */
  async #save(attrs: JobParameters, lockedAt: Date | undefined, nextRunAt: Date | null | undefined): Promise<void> {
    const id = String(attrs._id);
    const lease = this.#leases.get(attrs);
    if (!lease) throw new Error(`job ${id} was saved after its run ended`);
    if (lockedAt?.getTime() === lease.lockedAt.getTime()) return;
    // The run wrote its job's end: a renewal has no lock to move.
    const ended = this.#ended.get(attrs);
    if (lockedAt && ended) return;
    if (lockedAt) {
      // A renewed lock must reach the database before the old one expires.
      const [renewed] = await this.#write(this.store.renew([{ id, heldLock: lease.lockedAt, lockedAt }])).catch((error: unknown) => {
        this.#keepOldLock(attrs, lockedAt, lease);
        throw error;
      });
      if (!renewed) {
        this.#keepOldLock(attrs, lockedAt, lease);
        throw new Error(`job ${id} lost its lock to another instance before it could be renewed`);
      }
      this.#leases.set(attrs, { ...lease, lockedAt });
      return;
    }
    this.#leases.delete(attrs);
    this.#writing.delete(attrs);
    // The run wrote its job's end already: what Agenda would write now is moot.
    if (ended) {
      if (ended === "deleted") this.#rememberDeleted(id);
      return;
    }
    if (!nextRunAt) {
      if ((await this.#write(this.store.remove([{ id, heldLock: lease.lockedAt }]))).length === 1) this.#rememberDeleted(id);
      return;
    }
    const [saved] = await this.#write(this.store.save([toState(attrs, lease.lockedAt, nextRunAt)]));
    // Its next run is fetched as it falls due, not at the next poll.
    if (saved) this.feed.dueAt(nextRunAt);
    // The backend's own words, which Agenda expects for a job gone meanwhile (here: taken over).
    if (!saved) throw new Error(`job ${id} (name: ${attrs.name}) cannot be updated in the database, maybe it does not exist anymore?`);
  }

  /**
   * A renewal that did not go through: the run goes on under the lock it
   * holds, and Agenda, which moved the lock in memory before asking, sees
   * that one again (unless it has moved on meanwhile).
   */
  #keepOldLock(attrs: JobParameters, renewal: Date, lease: LockedJob): void {
    if (attrs.lockedAt?.getTime() === renewal.getTime()) attrs.lockedAt = lease.lockedAt;
  }

  /** Agenda deletes a finished job right after its final save; that save deleted it already, if it still held it. */
  async removeJobs(options: RemoveJobsOptions): Promise<number> {
    const ids = [...(options.id !== undefined ? [options.id] : []), ...(options.ids ?? [])].map(String);
    const other = Object.entries(options).some(([key, value]) => value !== undefined && key !== "id" && key !== "ids");
    if (other || ids.length === 0) throw new NotSupportedError("remove jobs by anything but their ids");
    return ids.filter((id) => this.#deletedOnSave.delete(id)).length;
  }

  /** The run's first save: the job handed out under the lock it carries becomes the run's lease. */
  #start(attrs: JobParameters): LockedJob | undefined {
    const id = String(attrs._id);
    const handed = this.#handedOut.get(id);
    if (!handed || handed.lockedAt.getTime() !== attrs.lockedAt?.getTime()) return undefined;
    this.#handedOut.delete(id);
    this.#leases.set(attrs, handed);
    return handed;
  }

  async #write<T>(writing: Promise<T>): Promise<T> {
    try {
      const written = await writing;
      this.onWrite({ ok: true });
      return written;
    } catch (error) {
      this.onWrite({ ok: false, error });
      throw error;
    }
  }

  #putBack(id: string): void {
    const handed = this.#handedOut.get(id);
    if (!handed) return;
    this.#handedOut.delete(id);
    this.feed.putBack(handed);
  }

  async getJobById(id: string): Promise<JobParameters | null> {
    const job = await this.store.get(id);
    return job ? toParameters(job) : null;
  }

  async queryJobs(options: JobsQueryOptions = {}): Promise<JobsResult> {
    const ids = [...(options.id !== undefined ? [options.id] : []), ...(options.ids ?? [])];
    if (ids.length === 0) throw new NotSupportedError("list jobs except by their ids");
    const now = new Date();
    const found = await Promise.all(ids.map((id) => this.store.get(id)));
    const jobs = found.flatMap((job) => {
      if (!job) return [];
      const parameters = toParameters(job) as JobParameters & { _id: JobId };
      return [{ ...parameters, state: computeJobState(parameters, now) }];
    });
    return { jobs, total: jobs.length };
  }

  async getJobsOverview(): Promise<JobsOverview[]> {
    const counts = await this.store.counts();
    const total = counts.due + counts.scheduled + counts.locked;
    const overview = { name: DELIVER_JOB, total, running: counts.locked, scheduled: counts.scheduled, queued: counts.due };
    return [{ ...overview, completed: 0, failed: 0, repeating: 0, paused: 0 }];
  }

  async getDistinctJobNames(): Promise<string[]> {
    return [DELIVER_JOB];
  }

  async getQueueSize(): Promise<number> {
    return (await this.store.counts()).due;
  }

  async saveJob(): Promise<never> {
    throw new NotSupportedError("save new jobs");
  }

  async lockJob(): Promise<never> {
    throw new NotSupportedError("lock a job by hand");
  }

  async disableJobs(): Promise<never> {
    throw new NotSupportedError("disable jobs");
  }

  async enableJobs(): Promise<never> {
    throw new NotSupportedError("enable jobs");
  }

  async purgeAllJobs(): Promise<never> {
    throw new NotSupportedError("purge jobs");
  }

  #rememberDeleted(id: string): void {
    if (this.#deletedOnSave.size >= DELETED_ON_SAVE_LIMIT) this.#deletedOnSave.clear();
    this.#deletedOnSave.add(id);
  }
}
