import type { JobId, JobParameters, JobRepository, JobsOverview, JobsResult } from "agenda";
import { toJobId } from "agenda";
import type { JobFeed } from "./job-feed.js";
import type { HeldJob, LockedJob } from "./job-store.js";

/** The one job this service defines: the next attempt of one notification. */
export const DELIVER_JOB = "deliver-notification";

export interface DeliverJobData {
  notificationId: string;
}

/**
 * A run under way: the job as it was locked, and the lock the run holds now
 * (a renewal moves it). The run's writes go out one after another, each
 * under the lock the one before left, so that the write ending a run waits
 * for a renewal still in flight.
 */
export class Lease {
  heldLock: Date;
  /** The run's end was written (its job finished, retried, rescheduled or removed): nothing more to renew. */
  ended = false;
  #writing: Promise<unknown> = Promise.resolve();

  constructor(readonly job: LockedJob) {
    this.heldLock = job.lockedAt;
  }

  write<T>(write: (held: HeldJob) => Promise<T>): Promise<T> {
    const next = this.#writing.catch(() => {}).then(() => write({ id: this.job.id, heldLock: this.heldLock }));
    this.#writing = next;
    return next;
  }

  /** The run's last write: its job's end. Once it went out, a renewal has nothing to move, whatever its outcome. */
  end<T>(write: (held: HeldJob) => Promise<T>): Promise<T> {
    return this.write((held) => {
      this.ended = true;
      return write(held);
    });
  }
}

class NotSupportedError extends Error {
  constructor(what: string) {
    super(`the delivery job repository does not ${what}: delivery jobs are made, run and ended by the delivery engine alone`);
  }
}

/**
 * Agenda's JobRepository for delivery jobs, as thin as Agenda's interface
 * allows. Agenda runs every attempt as a job it takes from here:
 *
 * - `getNextJobToRun` hands out a job the feed (job-feed.ts) locked ahead,
 *   fairly and only while its endpoint has a free slot, so Agenda only ever
 *   holds jobs it can start at once; `unlockJob(s)` puts one back.
 * - `saveJobState` as a run starts makes the job that run's lease; later,
 *   a moved lock (Agenda's `touch`) is a renewal. The run writes its own
 *   end with its attempt's record (delivery-engine.ts), so the save as it
 *   ends has nothing left to write.
 * - Creating, editing and listing jobs through Agenda's API is refused.
 */
export class AgendaJobs implements JobRepository {
  /** Jobs handed to Agenda that have not started yet, by id. */
  readonly #handedOut = new Map<string, LockedJob>();
  /** The lease of each run under way, by the run's own job attributes (the object Agenda saves it by). */
  readonly #leases = new WeakMap<JobParameters, Lease>();

  constructor(
    private readonly feed: JobFeed,
    private readonly store: { renew(job: HeldJob, lockedAt: Date): Promise<boolean> },
  ) {}

  /** The lease a run holds, once it has started (Agenda saves a run before running it). */
  leaseOf(attrs: JobParameters): Lease | undefined {
    return this.#leases.get(attrs);
  }

  async connect(): Promise<void> {}

  async getNextJobToRun(name: string): Promise<JobParameters | undefined> {
    if (name !== DELIVER_JOB) return undefined;
    const job = this.feed.take();
    if (!job) return undefined;
    this.#handedOut.set(job.id, job);
    return {
      _id: toJobId(job.id),
      name: DELIVER_JOB,
      priority: 0,
      nextRunAt: job.lockedAt,
      lockedAt: job.lockedAt,
      type: "normal",
      data: { notificationId: job.id } satisfies DeliverJobData,
      disabled: false,
    };
  }

  /** Agenda hands a job back when its lock limit filled while it was being fetched. */
  async unlockJob(job: JobParameters): Promise<void> {
    this.#putBack(String(job._id));
  }

  /** Agenda's stop hands back the jobs it took and did not start. */
  async unlockJobs(ids: (JobId | string)[]): Promise<void> {
    for (const id of ids) this.#putBack(String(id));
  }

  async saveJobState(attrs: JobParameters): Promise<void> {
    const lease = this.#leases.get(attrs);
    if (!lease) {
      const id = String(attrs._id);
      const handed = this.#handedOut.get(id);
      if (!handed || handed.lockedAt.getTime() !== attrs.lockedAt?.getTime())
        throw new NotSupportedError(`save job ${id}, which this instance does not hold`);
      this.#handedOut.delete(id);
      this.#leases.set(attrs, new Lease(handed));
      return;
    }
    const lockedAt = attrs.lockedAt;
    if (!lockedAt || lockedAt.getTime() === lease.heldLock.getTime()) return;
    // Agenda's touch: the lock must move in the database before the old one expires.
    await lease.write(async (held) => {
      if (lease.ended) return;
      if (!(await this.store.renew(held, lockedAt))) throw new Error(`job ${held.id} lost its lock to another instance`);
      lease.heldLock = lockedAt;
    });
  }

  #putBack(id: string): void {
    const handed = this.#handedOut.get(id);
    if (!handed) return;
    this.#handedOut.delete(id);
    this.feed.putBack(handed);
  }

  async getJobsOverview(): Promise<JobsOverview[]> {
    throw new NotSupportedError("give an overview (the job store counts the queue)");
  }

  async getDistinctJobNames(): Promise<string[]> {
    throw new NotSupportedError("list job names");
  }

  async getQueueSize(): Promise<number> {
    throw new NotSupportedError("count the queue (the job store does)");
  }

  async queryJobs(): Promise<JobsResult> {
    throw new NotSupportedError("list jobs");
  }

  async getJobById(): Promise<JobParameters | null> {
    throw new NotSupportedError("read jobs by id");
  }

  async removeJobs(): Promise<number> {
    throw new NotSupportedError("remove jobs");
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
}
