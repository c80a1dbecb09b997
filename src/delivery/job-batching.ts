import type { JobParameters, JobRepository } from "agenda";
import { Coalescer } from "../coalescer.js";

/** Statements that serve many Agenda jobs at once, where the backend has them (PostgreSQL). */
export interface BulkJobOperations {
  /** getNextJobToRun for up to `limit` jobs due by `dueBy`, in the order it would find them one by one. */
  lockNextJobs(jobName: string, dueBy: Date, lockDeadline: Date, limit: number, lastModifiedBy?: string): Promise<JobParameters[]>;
  /** Clears the locks still held as given; a job locked since by someone else keeps its lock. */
  unlockIfHeld(jobs: ReadonlyArray<{ id: string; lockedAt: Date }>): Promise<void>;
  /** saveJobState for many jobs: true where the job still existed and was saved. */
  saveJobStates(saves: ReadonlyArray<{ job: JobParameters; lastModifiedBy?: string }>): Promise<boolean[]>;
  /** Deletes the jobs; answers the ids that existed. */
  removeJobs(ids: readonly string[]): Promise<string[]>;
}

/** What inserting notifications with their jobs answers each caller (see DeliverySchedulerOptions.insertQueued). */
export interface QueuedInsert {
  /** One of the call's new job ids (for the wake-up), if it queued any. */
  jobId?: string;
  /** The call's jobs inserted already locked by this instance, to run without a lock round trip. */
  locked: JobParameters[];
}

/** Ids deleted by their final save, waiting for Agenda's delete; bounded should one never come. */
const DELETED_ON_SAVE_LIMIT = 100_000;
/**
 * A job locked ahead is handed to Agenda only this fresh (or a quarter of
 * its lock lifetime, if less); older ones go back to the table. Agenda then
 * has nearly the whole lifetime, as with its own locks, and no lock it runs
 * under can expire sooner than Agenda expects.
 */
const HANDOUT_MAX_AGE_MS = 2_000;
/**
 * A lock-ahead that found the table drained vouches for it this long: jobs
 * inserted locked meanwhile are run without looking for more after each.
 * What comes otherwise (retries falling due, expired locks) is found by the
 * next lock-ahead after that, or by the poll.
 */
const DRAINED_FOR_MS = 250;

export interface BatchingRepository {
  repository: JobRepository;
  /**
   * How many new jobs of `name` may be inserted locked for this instance
   * now: room left in the batch, and none while due jobs wait in the table
   * (the last lock-ahead filled its batch), so new jobs never overtake a
   * backlog for longer than one batch.
   */
  room(name: string): number;
  /** Takes jobs inserted locked for this instance into the line, ahead of Agenda's next fill. */
  adopt(jobs: JobParameters[]): void;
  /** Due jobs of `name` may have come that no lock-ahead saw (inserted unlocked, or by another instance). */
  stale(name: string): void;
  /** Hands back the locks taken ahead and not given to Agenda yet. */
  release(): Promise<void>;
}

/**
 * Agenda's job repository with its per-delivery statements shared. Agenda
 * locks one job per round trip and saves each job's state twice, then deletes
 * it; here a fill locks `lockBatch` jobs in one statement and hands them out
 * one by one, and the saves and deletes of jobs finishing together go out as
 * one statement each. Agenda still locks, runs, saves and retries every job.
 */
export function batchJobs(
  base: JobRepository,
  bulk: BulkJobOperations,
  options: {
    lockBatch: number;
    /** As Agenda's option: a one-time job that succeeded is deleted. */
    removeOnComplete: boolean;
    /**
     * Skip the save Agenda makes as a one-time job starts (its lastRunAt and
     * nextRunAt), which costs a round trip before every run. The job is
     * locked already: a crash mid-run brings it back through lock expiry
     * either way, and the save after the run writes every field.
     */
    skipStartSave: boolean;
    /** Jobs were locked ahead with no fill waiting for them: Agenda should look again. */
    onMoreLocked: () => void;
    onError: (error: unknown) => void;
  },
): BatchingRepository {
  const { lockBatch, removeOnComplete, skipStartSave, onMoreLocked, onError } = options;
  const buffers = new Map<string, JobParameters[]>();
  /**
   * Per job name: when the last lock-ahead that found fewer due jobs than a
   * batch (none left waiting) was sent; 0 once jobs may have come since
   * that no lock-ahead saw (see `stale`).
   */
  const drainedAt = new Map<string, number>();
  const drained = (name: string) => Date.now() - (drainedAt.get(name) ?? 0) < DRAINED_FOR_MS;
  /** Every lock-ahead under way, so release() can wait for them. */
  const fetches = new Set<Promise<number>>();
  let lastFetch: Promise<number> | undefined;
  let released = false;
  /** A job was handed out in this turn of the event loop: a fill is running through the buffer. */
  let handingOut = false;
  let lookingAhead = false;
  let lookAgain = false;
  const saves = new Coalescer((calls: Array<{ job: JobParameters; lastModifiedBy?: string }>) => bulk.saveJobStates(calls));
  const removes = new Coalescer(async (ids: string[]) => {
    const removed = new Set(await bulk.removeJobs(ids));
    return ids.map((id) => (removed.has(id) ? 1 : 0));
  });

  const held = (jobs: JobParameters[]) => jobs.map((job) => ({ id: String(job._id), lockedAt: job.lockedAt as Date }));
  const unlock = (jobs: JobParameters[]) => {
    if (jobs.length > 0) bulk.unlockIfHeld(held(jobs)).catch(onError);
  };
  /** Puts jobs locked for this instance at the back of their name's line. */
  const append = (jobs: JobParameters[]) => {
    for (const job of jobs) {
      const buffer = buffers.get(job.name) ?? [];
      buffer.push(job);
      buffers.set(job.name, buffer);
    }
  };
  const fresh = (job: JobParameters, maxAgeMs: number) => (job.lockedAt?.getTime() ?? 0) >= Date.now() - maxAgeMs;

  /** The next job locked ahead; stale ones on the way go back to the table. */
  const take = (name: string, lockDeadline: Date): JobParameters | undefined => {
    const buffer = buffers.get(name) ?? [];
    const maxAge = Math.min(HANDOUT_MAX_AGE_MS, (Date.now() - lockDeadline.getTime()) / 4);
    const stale: JobParameters[] = [];
    let job = buffer.shift();
    while (job && !fresh(job, maxAge)) {
      stale.push(job);
      job = buffer.shift();
    }
    unlock(stale);
    if (job && !handingOut) {
      handingOut = true;
      setImmediate(() => {
        handingOut = false;
      });
    }
    return job;
  };

  type LockArguments = [name: string, lockDeadline: Date, lastModifiedBy: string | undefined];

  /**
   * Locks up to a batch of due jobs into the buffer; answers how many.
   * Agenda would also lock jobs due before its next poll, and hold them in
   * its queue until their time: retries waiting there take the places of
   * fresh deliveries. Here a job is locked once due, and the poll finds a
   * retry at most one poll interval after its time.
   */
  const lockAhead = ([name, lockDeadline, lastModifiedBy]: LockArguments): Promise<number> => {
    const fetch = (async () => {
      const sentAt = Date.now();
      const jobs = await bulk.lockNextJobs(name, new Date(sentAt), lockDeadline, lockBatch, lastModifiedBy);
      drainedAt.set(name, jobs.length < lockBatch ? sentAt : 0);
      if (released) {
        if (jobs.length > 0) await bulk.unlockIfHeld(held(jobs));
        return 0;
      }
      append(jobs);
      return jobs.length;
    })();
    fetches.add(fetch);
    lastFetch = fetch;
    void fetch.then(
      () => fetches.delete(fetch),
      () => fetches.delete(fetch),
    );
    return fetch;
  };

  /**
   * Looks for more due jobs without holding up the fill that emptied the
   * buffer (Agenda starts running what it took only once its fill ends), and
   * wakes Agenda if it finds some. A request made while one is in flight
   * runs again after it, so no job committed before the request is missed.
   */
  const lookAhead = (args: LockArguments): void => {
    if (lookingAhead) {
      lookAgain = true;
      return;
    }
    lookingAhead = true;
    void (async () => {
      do {
        lookAgain = false;
        const found = await lockAhead(args).catch((error: unknown) => {
          onError(error);
          return 0;
        });
        if (found > 0) onMoreLocked();
      } while (lookAgain && !released);
      lookingAhead = false;
    })();
  };

  const getNextJobToRun: JobRepository["getNextJobToRun"] = async (name, _nextScanAt, lockDeadline, _now, lockOptions) => {
    const args: LockArguments = [name, lockDeadline, lockOptions?.lastModifiedBy];
    const ready = take(name, lockDeadline);
    if (ready) return ready;
    // The fill that just emptied the buffer ends here; the next batch is locked
    // behind it, unless the table was just seen drained and nothing came since.
    if (handingOut) {
      if (!drained(name)) lookAhead(args);
      return undefined;
    }
    // Share a lock-ahead already under way; if it brought nothing for us, lock
    // with one that started after this call, so nothing committed before it is missed.
    if (lastFetch) {
      await lastFetch.catch(() => 0);
      const joined = take(name, lockDeadline);
      if (joined) return joined;
    }
    await lockAhead(args);
    return take(name, lockDeadline);
  };

  /**
   * Agenda hands a job back when its lock limit filled up while the job was
   * being fetched; a due, fresh job goes back to the front of the line, still
   * locked, instead of back to the table (where the next fill would lock it again).
   */
  const unlockJob: JobRepository["unlockJob"] = async (job) => {
    const due = job.nextRunAt === null || job.nextRunAt.getTime() <= Date.now();
    if (released || !due || !fresh(job, HANDOUT_MAX_AGE_MS)) return base.unlockJob(job);
    buffers.set(job.name, [{ ...job }, ...(buffers.get(job.name) ?? [])]);
  };

  /**
   * Agenda saves a finished one-time job's final state and then deletes it
   * (removeOnComplete). With `removeOnComplete` here too, that final save is
   * the delete, and the delete that follows answers from memory: one write
   * instead of two.
   */
  const deletedOnSave = new Set<string>();
  /** A one-time job's last run started (lastRunAt) and has not failed since; `lastRunAt` when so. */
  const runNotFailed = (job: JobParameters): Date | undefined =>
    !job.repeatInterval && !job.repeatAt && job.lastRunAt !== undefined && (job.failedAt === undefined || job.failedAt < job.lastRunAt)
      ? job.lastRunAt
      : undefined;

  const finishedForGood = (job: JobParameters) => {
    const ranAt = runNotFailed(job);
    return (
      removeOnComplete &&
      ranAt !== undefined &&
      job.lockedAt === undefined &&
      !job.nextRunAt &&
      job.lastFinishedAt !== undefined &&
      job.lastFinishedAt >= ranAt
    );
  };

  /** The save Agenda's Job.run() makes before running: still locked, started after its last finish. */
  const startSave = (job: JobParameters) => {
    const ranAt = runNotFailed(job);
    return ranAt !== undefined && job.lockedAt !== undefined && (job.lastFinishedAt === undefined || job.lastFinishedAt < ranAt);
  };

  const saveJobState: JobRepository["saveJobState"] = async (job, options) => {
    if (skipStartSave && startSave(job)) return;
    if (finishedForGood(job)) {
      if ((await removes.call(String(job._id))) === 1) {
        if (deletedOnSave.size >= DELETED_ON_SAVE_LIMIT) deletedOnSave.clear();
        deletedOnSave.add(String(job._id));
        return;
      }
    }
    const saved = await saves.call({ job, ...(options?.lastModifiedBy ? { lastModifiedBy: options.lastModifiedBy } : {}) });
    // The backend's own words, which Agenda expects for a job deleted meanwhile.
    if (!saved) throw new Error(`job ${job._id} (name: ${job.name}) cannot be updated in the database, maybe it does not exist anymore?`);
  };

  // Agenda deletes a finished one-time job by its id alone; other deletes go as they came.
  const removeJobs: JobRepository["removeJobs"] = (options) => {
    const only = Object.entries(options).filter(([, value]) => value !== undefined);
    if (only.length === 1 && only[0]?.[0] === "id") {
      if (deletedOnSave.delete(String(options.id))) return Promise.resolve(1);
      return removes.call(String(options.id));
    }
    return base.removeJobs(options);
  };

  return {
    repository: withOverrides(base, { getNextJobToRun, unlockJob, saveJobState, removeJobs }),
    room(name) {
      if (released || !drained(name)) return 0;
      return Math.max(0, lockBatch - (buffers.get(name)?.length ?? 0));
    },
    stale(name) {
      drainedAt.set(name, 0);
    },
    adopt(jobs) {
      if (jobs.length === 0) return;
      if (released) {
        unlock(jobs);
        return;
      }
      append(jobs);
      onMoreLocked();
    },
    async release() {
      released = true;
      await Promise.allSettled(fetches);
      const jobs = [...buffers.values()].flat();
      buffers.clear();
      if (jobs.length > 0) await bulk.unlockIfHeld(held(jobs));
    },
  };
}

/**
 * `target` with some members replaced; everything else is the target's own,
 * methods bound to it (the backend keeps sharing state with the original).
 */
export function withOverrides<T extends object>(target: T, overrides: { [K in keyof T]?: T[K] | undefined }): T {
  return new Proxy(target, {
    get(object, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof T];
      const value = Reflect.get(object, property, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}
