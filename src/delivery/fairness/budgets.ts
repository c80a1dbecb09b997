import type { FairLanes, LaneJob, LaneLimits } from "./fair-lanes.js";

/**
 * What one lock of due jobs may take (the fetch's side of fairness): at most
 * `limit` jobs, each listed endpoint at most its budget (one not listed a
 * stranger's, `defaultPerEndpoint`), and each client at most its own across
 * its endpoints. A budget of 0 leaves that endpoint's or client's jobs where
 * they are.
 */
export interface LockRequest {
  limit: number;
  endpointBudgets: ReadonlyMap<string, number>;
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
 * An endpoint whose budget is spent is left out of the scan altogether, so
 * the rows of others behind it are reached by the next lock, not by reading
 * thousands of one endpoint's rows for the few it may still take.
 */
export function scanWindow(request: LockRequest): number {
  let takeable = request.defaultPerEndpoint * STRANGERS_PER_LOCK;
  for (const budget of request.endpointBudgets.values()) takeable += budget;
  return SCAN_PER_JOB * Math.max(1, Math.min(request.limit, takeable));
}

/** The keys (endpoints or clients) whose budget is 0: a lock leaves their due jobs where they are. */
export function withoutBudget(budgets: ReadonlyMap<string, number>): string[] {
  return [...budgets].filter(([, budget]) => budget === 0).map(([key]) => key);
}

/** Endpoints and clients whose due jobs a lock left where they are. */
export interface PassedOver {
  endpoints: readonly string[];
  clients: readonly string[];
}

/**
 * THE rule a lock applies to the due jobs it read (`candidates`, oldest due
 * first, ties by id): each endpoint gets at most its budget, then each
 * client at most its own among what its endpoints' budgets let through, and
 * `limit` in all; every endpoint and client over its budget among the
 * candidates is passed over. The MongoDB store calls it; PostgreSQL's lock statement
 * (store/postgres/job-statements.ts, LOCK_DUE) is the same rule in SQL
 * window functions, and test/store/lock-budgets.test.ts holds the two to
 * the same answers.
 */
export function withinBudgets<T extends LaneJob>(candidates: readonly T[], request: LockRequest): { chosen: T[]; passedOver: PassedOver } {
  const endpoints = new Map<string, number>();
  const clients = new Map<string, number>();
  const passedEndpoints = new Set<string>();
  const passedClients = new Set<string>();
  const chosen: T[] = [];
  // Past the limit, candidates are still counted: those over a budget are passed over (left behind), the rest just not taken.
  for (const candidate of candidates) {
    const endpointTaken = endpoints.get(candidate.endpoint) ?? 0;
    if (endpointTaken >= (request.endpointBudgets.get(candidate.endpoint) ?? request.defaultPerEndpoint)) {
      passedEndpoints.add(candidate.endpoint);
      continue;
    }
    endpoints.set(candidate.endpoint, endpointTaken + 1);
    const clientTaken = clients.get(candidate.clientId) ?? 0;
    clients.set(candidate.clientId, clientTaken + 1);
    if (clientTaken >= (request.clientBudgets.get(candidate.clientId) ?? request.defaultPerClient)) {
      passedClients.add(candidate.clientId);
      continue;
    }
    if (chosen.length < request.limit) chosen.push(candidate);
  }
  return { chosen, passedOver: { endpoints: [...passedEndpoints], clients: [...passedClients] } };
}

/**
 * Completions per key over the last one to two seconds: two one-second
 * buckets, the older dropped as the clock moves on. Keys with nothing in
 * either bucket are forgotten, so memory follows the active keys only.
 */
export class CompletionRate {
  #current = new Map<string, number>();
  #previous = new Map<string, number>();
  #bucketStart: number;

  constructor(private readonly now: () => number) {
    this.#bucketStart = now();
  }

  record(key: string): void {
    this.#roll();
    this.#current.set(key, (this.#current.get(key) ?? 0) + 1);
  }

  /** Completions of `key` in the current and the previous second. */
  recent(key: string): number {
    this.#roll();
    return (this.#current.get(key) ?? 0) + (this.#previous.get(key) ?? 0);
  }

  /** Every key with a recent completion. */
  keys(): IterableIterator<string> {
    this.#roll();
    return new Set([...this.#current.keys(), ...this.#previous.keys()]).values();
  }

  #roll(): void {
    const elapsed = this.now() - this.#bucketStart;
    if (elapsed < 1000) return;
    this.#previous = elapsed < 2000 ? this.#current : new Map();
    this.#current = new Map();
    this.#bucketStart += Math.floor(elapsed / 1000) * 1000;
  }
}

/**
 * How many more jobs the feed should hold for each endpoint and client: what
 * it can start soon. An endpoint may hold enough to fill its free slots (its
 * limit, earned-concurrency.ts, less its requests in flight), or as many as
 * it finished lately if more (a fast endpoint then gets whole batches),
 * minus those waiting already, and never more than `maxWaiting` (so that one
 * fast endpoint cannot fill the feed). An endpoint with every slot busy and
 * nothing finished lately (a hung one) gets none: more of its jobs would
 * only wait in the feed until their locks grow stale. Clients likewise,
 * across their endpoints.
 */
export class LaneBudgets<J extends LaneJob> {
  readonly #endpointRate: CompletionRate;
  readonly #clientRate: CompletionRate;

  constructor(
    private readonly lanes: FairLanes<J>,
    private readonly limits: LaneLimits,
    /** The most one endpoint (or client) may hold waiting. */
    private readonly maxWaiting: number,
    now: () => number,
  ) {
    this.#endpointRate = new CompletionRate(now);
    this.#clientRate = new CompletionRate(now);
  }

  /** A job of this endpoint and client finished its request. */
  finished(job: LaneJob): void {
    this.#endpointRate.record(job.endpoint);
    this.#clientRate.record(job.clientId);
  }

  endpoint(endpoint: string): number {
    const want = Math.max(this.#endpointRate.recent(endpoint), this.limits.endpoint.limit(endpoint) - this.lanes.inFlightTo(endpoint));
    return Math.max(0, Math.min(want, this.maxWaiting) - this.lanes.waitingFor(endpoint));
  }

  client(clientId: string): number {
    const want = Math.max(this.#clientRate.recent(clientId), this.limits.client.limit(clientId) - this.lanes.inFlightFor(clientId));
    return Math.max(0, Math.min(want, this.maxWaiting) - this.lanes.waitingForClient(clientId));
  }

  /** Which of these new jobs fit, in order: within each endpoint's and client's budget, and `room` in all. */
  fit(jobs: readonly LaneJob[], room: number): boolean[] {
    const endpoints = new Map<string, number>();
    const clients = new Map<string, number>();
    return jobs.map((job) => {
      const endpointBudget = endpoints.get(job.endpoint) ?? this.endpoint(job.endpoint);
      const clientBudget = clients.get(job.clientId) ?? this.client(job.clientId);
      const fits = room > 0 && endpointBudget > 0 && clientBudget > 0;
      endpoints.set(job.endpoint, endpointBudget - (fits ? 1 : 0));
      clients.set(job.clientId, clientBudget - (fits ? 1 : 0));
      if (fits) room--;
      return fits;
    });
  }

  /**
   * The lock request for `limit` jobs: the budget of every endpoint and
   * client whose budget differs from a stranger's (those holding jobs, and
   * those that finished some lately).
   */
  request(limit: number): LockRequest {
    const endpointBudgets = new Map<string, number>();
    for (const { endpoint } of this.lanes.endpoints()) endpointBudgets.set(endpoint, this.endpoint(endpoint));
    for (const endpoint of this.#endpointRate.keys())
      if (!endpointBudgets.has(endpoint)) endpointBudgets.set(endpoint, this.endpoint(endpoint));
    const clientBudgets = new Map<string, number>();
    for (const { clientId } of this.lanes.clients()) clientBudgets.set(clientId, this.client(clientId));
    for (const clientId of this.#clientRate.keys()) if (!clientBudgets.has(clientId)) clientBudgets.set(clientId, this.client(clientId));
    return {
      limit,
      endpointBudgets,
      clientBudgets,
      defaultPerEndpoint: this.limits.endpoint.floor,
      defaultPerClient: this.limits.client.floor,
    };
  }
}

/**
 * Endpoints and clients that may have due jobs in the store the feed did
 * not take: a lock's budgets passed them over or left them out, or their
 * jobs were unlocked. When one of their jobs finishes here (room again),
 * the feed fetches. A fetch that read every due job it could see tells
 * exactly which are still left behind, so the sets follow the active
 * endpoints and clients rather than grow.
 */
export class LeftBehind {
  #endpoints = new Set<string>();
  #clients = new Set<string>();

  /** These left due jobs in the store. */
  add(left: PassedOver): void {
    for (const endpoint of left.endpoints) this.#endpoints.add(endpoint);
    for (const clientId of left.clients) this.#clients.add(clientId);
  }

  /** These jobs were unlocked: due in the store again. */
  unlocked(jobs: readonly LaneJob[]): void {
    for (const job of jobs) {
      this.#endpoints.add(job.endpoint);
      this.#clients.add(job.clientId);
    }
  }

  /**
   * The job finished, and its endpoint or client, which had left jobs
   * behind, has none waiting here any more (`waiting` says how many it has):
   * time to fetch theirs. Answers whether to, and forgets them.
   */
  roomFor(job: LaneJob, waiting: { endpoint: number; client: number }): boolean {
    const endpointLeft = this.#endpoints.has(job.endpoint) && waiting.endpoint === 0;
    const clientLeft = this.#clients.has(job.clientId) && waiting.client === 0;
    if (!endpointLeft && !clientLeft) return false;
    this.#endpoints.delete(job.endpoint);
    this.#clients.delete(job.clientId);
    return true;
  }

  /** A fetch read every due job it could see: what is left behind now is exactly what it passed over or left out. */
  resetTo(left: PassedOver): void {
    this.#endpoints = new Set(left.endpoints);
    this.#clients = new Set(left.clients);
  }

  get size(): { endpoints: number; clients: number } {
    return { endpoints: this.#endpoints.size, clients: this.#clients.size };
  }
}
