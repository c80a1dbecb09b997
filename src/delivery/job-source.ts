import type { LaneJob } from "./fair-lanes.js";

/** A job this instance holds a lock on. */
export interface FeedJob extends LaneJob {
  readonly id: string;
  /** When this instance's lock was taken: a job is handed out only while its lock is fresh. */
  readonly lockedAt: Date;
}

export interface LockRequest {
  /** Lock at most this many jobs. */
  limit: number;
  /** How many jobs each listed endpoint may get (0: none of its jobs); one not listed may get `defaultPerEndpoint`. */
  endpointBudgets: ReadonlyMap<string, number>;
  /** The same per client, across its endpoints (applied to what their endpoints' budgets let through). */
  clientBudgets: ReadonlyMap<string, number>;
  defaultPerEndpoint: number;
  defaultPerClient: number;
}

export interface LockedBatch<J> {
  jobs: J[];
  /** No other job was due that this request could have taken. */
  drained: boolean;
  /** Endpoints and clients with due jobs their budget left in the source. */
  passedOver: { endpoints: readonly string[]; clients: readonly string[] };
}

/** Where jobs wait to be locked (a table, a collection). */
export interface JobSource<J extends FeedJob> {
  /** Locks due jobs, and jobs whose holder's lock expired, oldest due first. */
  lockDue(request: LockRequest): Promise<LockedBatch<J>>;
  /** Hands back locks still held as given (a job locked since by someone else keeps its lock). */
  unlock(jobs: readonly J[]): Promise<void>;
}
