import { CompletionRate } from "./completion-rate.js";
import type { FairLanes, LaneJob, LaneLimits } from "./fair-lanes.js";

/**
 * How many more jobs the feed should hold for each endpoint and client: what
 * it can start soon. An endpoint may hold enough to fill its free slots (its
 * limit, earned-concurrency.ts, less its requests in flight), or
 * as many as it finished lately if more (a fast endpoint then gets whole
 * batches), minus those waiting already, and never more than `maxWaiting`
 * (so that one fast endpoint cannot fill the feed). An endpoint with every
 * slot busy and nothing finished lately (a hung one) gets none: more of its
 * jobs would only wait in the feed until their locks grow stale. Clients
 * likewise, across their endpoints.
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
    const waiting = this.lanes.waitingFor(endpoint);
    return Math.max(0, Math.min(want, this.maxWaiting) - waiting);
  }

  client(clientId: string): number {
    const want = Math.max(this.#clientRate.recent(clientId), this.limits.client.limit(clientId) - this.lanes.inFlightFor(clientId));
    const waiting = this.lanes.waitingForClient(clientId);
    return Math.max(0, Math.min(want, this.maxWaiting) - waiting);
  }

  /**
   * Which of these new jobs fit, in order: within each endpoint's and
   * client's budget, and `room` in all.
   */
  fit(jobs: ReadonlyArray<LaneJob>, room: number): boolean[] {
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
   * The budget of every endpoint and client whose budget differs from a
   * stranger's (its limit's floor): those holding jobs, and those that
   * finished some lately.
   */
  all(): { endpoints: Map<string, number>; clients: Map<string, number> } {
    const endpoints = new Map<string, number>();
    for (const { endpoint } of this.lanes.endpoints()) endpoints.set(endpoint, this.endpoint(endpoint));
    for (const endpoint of this.#endpointRate.keys()) if (!endpoints.has(endpoint)) endpoints.set(endpoint, this.endpoint(endpoint));
    const clients = new Map<string, number>();
    for (const { clientId } of this.lanes.clients()) clients.set(clientId, this.client(clientId));
    for (const clientId of this.#clientRate.keys()) if (!clients.has(clientId)) clients.set(clientId, this.client(clientId));
    return { endpoints, clients };
  }
}
