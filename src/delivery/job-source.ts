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

/** A lock reads this many due rows per job it may take (rows over a budget are passed over, not taken). */
const SCAN_PER_JOB = 2;
/** How many endpoints with no budget of their own (a stranger's) one lock plans for. */
const STRANGERS_PER_LOCK = 2;

/**
 * How many due rows one lock reads, oldest first: twice what it can take.
 * What it can take is bounded by `limit` and by the budgets: the listed
 * endpoints' budgets, plus a stranger's budget for a few endpoints not
 * listed. An endpoint whose budget is spent is left out of the scan, so the
 * rows of others behind it are reached by the next lock, not by reading and
 * sorting thousands of one endpoint's rows for the few it may still take.
 */
export function scanWindow(request: LockRequest): number {
  let takeable = request.defaultPerEndpoint * STRANGERS_PER_LOCK;
  for (const budget of request.endpointBudgets.values()) takeable += budget;
  return SCAN_PER_JOB * Math.max(1, Math.min(request.limit, takeable));
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
