import type { ConcurrencyLimit } from "./earned-concurrency.js";

/** What the lanes need to know of a job: whose it is and where it goes. */
export interface LaneJob {
  /** The receiving endpoint (see endpoint.ts): the unit whose requests in flight are capped. */
  readonly endpoint: string;
  /** The client that owns it: the unit whose requests in flight are capped across its endpoints. */
  readonly clientId: string;
}

export interface LaneLimits {
  /** Requests in flight per endpoint. */
  endpoint: ConcurrencyLimit;
  /** Requests in flight per client, across its endpoints. */
  client: ConcurrencyLimit;
}

/** See `FairLanes.occupancy`. */
export interface LaneOccupancy {
  inFlight: number;
  waiting: number;
  endpointsInFlight: number;
  endpointsAtLimit: number;
}

interface EndpointLane<J> {
  readonly key: string;
  readonly client: ClientLane<J>;
  readonly waiting: J[];
  inFlight: number;
}

interface ClientLane<J> {
  readonly id: string;
  inFlight: number;
  /** Its endpoints with a waiting job and a free slot, in turn order. */
  readonly ready: Set<EndpointLane<J>>;
  /** Jobs waiting across its endpoints. */
  waiting: number;
}

/**
 * Jobs waiting for their endpoint, handed out fairly: in turn by client,
 * then in turn by each client's endpoints, and only while the endpoint and
 * the client are under their limits of requests in flight (which may move:
 * see earned-concurrency.ts). A slow or hung endpoint can therefore hold no
 * more than its limit, whatever it has waiting; everyone else's jobs keep
 * flowing past it. A job is "in flight" from `take()` to `finish()`.
 */
export class FairLanes<J extends LaneJob> {
  readonly #endpoints = new Map<string, EndpointLane<J>>();
  readonly #clients = new Map<string, ClientLane<J>>();
  /** Clients with a job they may start now, in turn order. */
  readonly #ready = new Set<ClientLane<J>>();
  /** When each job in flight started, as its endpoint's and its client's limits count it. */
  readonly #started = new Map<J, { endpoint: number; client: number }>();
  #waiting = 0;

  constructor(private readonly limits: LaneLimits) {}

  /** Jobs waiting, all lanes together. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Jobs handed out and not finished. */
  get inFlight(): number {
    return this.#started.size;
  }

  /** Whether `take()` would hand out a job now (or finds, looking, that a limit has dropped). */
  get runnable(): boolean {
    return this.#ready.size > 0;
  }

  /** Puts a job at the back of its endpoint's line. */
  add(job: J): void {
    const lane = this.#lane(job);
    lane.waiting.push(job);
    lane.client.waiting++;
    this.#waiting++;
    this.#markReady(lane);
  }

  /** The next job whose endpoint and client have a free slot, now counted in flight. */
  take(): J | undefined {
    for (const client of this.#ready) {
      this.#ready.delete(client);
      // A client or an endpoint whose limit dropped leaves the turn order; a finish brings it back.
      if (client.inFlight >= this.limits.client.limit(client.id)) continue;
      for (const lane of client.ready) {
        client.ready.delete(lane);
        if (lane.waiting.length === 0 || lane.inFlight >= this.limits.endpoint.limit(lane.key)) continue;
        const job = lane.waiting.shift() as J;
        client.waiting--;
        this.#waiting--;
        lane.inFlight++;
        client.inFlight++;
        this.#started.set(job, { endpoint: this.limits.endpoint.started(lane.key), client: this.limits.client.started(client.id) });
        // Back of the turn order, if they can go again.
        this.#markReady(lane);
        return job;
      }
    }
    return undefined;
  }

  /** The job's request is over: its endpoint and client get the slot back, and learn how long it took. */
  finish(job: J): void {
    const lane = this.#release(job);
    this.limits.endpoint.finished(lane.key, this.#startOf(job).endpoint, lane.waiting.length > 0);
    this.limits.client.finished(lane.client.id, this.#startOf(job).client, lane.client.waiting > 0);
    this.#started.delete(job);
    this.#markReady(lane);
    this.#forgetIfIdle(lane);
  }

  /** A job handed out that never ran leaves the lanes: its slots are free, and its limits learn nothing. */
  abandon(job: J): void {
    const lane = this.#release(job);
    this.limits.endpoint.abandoned(lane.key, this.#startOf(job).endpoint);
    this.limits.client.abandoned(lane.client.id, this.#startOf(job).client);
    this.#started.delete(job);
    this.#markReady(lane);
    this.#forgetIfIdle(lane);
  }

  /** A job handed out that never ran goes back to the front of its line. */
  putBack(job: J): void {
    this.abandon(job);
    const lane = this.#lane(job);
    lane.waiting.unshift(job);
    lane.client.waiting++;
    this.#waiting++;
    this.#markReady(lane);
  }

  /** Removes and answers the waiting jobs that `match`. */
  remove(match: (job: J) => boolean): J[] {
    const removed: J[] = [];
    for (const lane of [...this.#endpoints.values()]) {
      const kept = lane.waiting.filter((job) => !match(job));
      if (kept.length === lane.waiting.length) continue;
      removed.push(...lane.waiting.filter(match));
      const gone = lane.waiting.length - kept.length;
      lane.waiting.splice(0, lane.waiting.length, ...kept);
      lane.client.waiting -= gone;
      this.#waiting -= gone;
      if (kept.length === 0) lane.client.ready.delete(lane);
      if (lane.client.ready.size === 0) this.#ready.delete(lane.client);
      this.#forgetIfIdle(lane);
    }
    return removed;
  }

  /** Waiting and in-flight jobs of each endpoint that has any. */
  *endpoints(): IterableIterator<{ endpoint: string; clientId: string; waiting: number; inFlight: number }> {
    for (const lane of this.#endpoints.values()) {
      yield { endpoint: lane.key, clientId: lane.client.id, waiting: lane.waiting.length, inFlight: lane.inFlight };
    }
  }

  /** Waiting and in-flight jobs of each client that has any. */
  *clients(): IterableIterator<{ clientId: string; waiting: number; inFlight: number }> {
    for (const client of this.#clients.values()) yield { clientId: client.id, waiting: client.waiting, inFlight: client.inFlight };
  }

  /**
   * For metrics, in one pass over the endpoints that have jobs: requests in
   * flight and jobs waiting, endpoints with a request in flight, and those
   * of them at their limit.
   */
  occupancy(): LaneOccupancy {
    let endpointsInFlight = 0;
    let endpointsAtLimit = 0;
    for (const lane of this.#endpoints.values()) {
      if (lane.inFlight === 0) continue;
      endpointsInFlight++;
      if (lane.inFlight >= this.limits.endpoint.limit(lane.key)) endpointsAtLimit++;
    }
    return { inFlight: this.#started.size, waiting: this.#waiting, endpointsInFlight, endpointsAtLimit };
  }

  /** Requests in flight to this endpoint. */
  inFlightTo(endpoint: string): number {
    return this.#endpoints.get(endpoint)?.inFlight ?? 0;
  }

  /** Waiting jobs of this endpoint. */
  waitingFor(endpoint: string): number {
    return this.#endpoints.get(endpoint)?.waiting.length ?? 0;
  }

  /** Requests in flight for this client. */
  inFlightFor(clientId: string): number {
    return this.#clients.get(clientId)?.inFlight ?? 0;
  }

  /** Waiting jobs of this client. */
  waitingForClient(clientId: string): number {
    return this.#clients.get(clientId)?.waiting ?? 0;
  }

  #lane(job: J): EndpointLane<J> {
    let lane = this.#endpoints.get(job.endpoint);
    if (!lane) {
      let client = this.#clients.get(job.clientId);
      if (!client) {
        client = { id: job.clientId, inFlight: 0, ready: new Set(), waiting: 0 };
        this.#clients.set(job.clientId, client);
      }
      lane = { key: job.endpoint, client, waiting: [], inFlight: 0 };
      this.#endpoints.set(job.endpoint, lane);
    }
    return lane;
  }

  #startOf(job: J): { endpoint: number; client: number } {
    const started = this.#started.get(job);
    if (!started) throw new Error(`a job not in flight cannot finish (endpoint ${job.endpoint})`);
    return started;
  }

  /** The job's lane, its slot given back. */
  #release(job: J): EndpointLane<J> {
    this.#startOf(job);
    const lane = this.#endpoints.get(job.endpoint) as EndpointLane<J>;
    lane.inFlight--;
    lane.client.inFlight--;
    return lane;
  }

  /**
   * Adds the lane, and its client, to the back of their turn orders if they
   * can start a job now (one already in its turn order keeps its place).
   */
  #markReady(lane: EndpointLane<J>): void {
    if (lane.waiting.length > 0 && lane.inFlight < this.limits.endpoint.limit(lane.key)) lane.client.ready.add(lane);
    if (lane.client.ready.size > 0 && lane.client.inFlight < this.limits.client.limit(lane.client.id)) this.#ready.add(lane.client);
  }

  #forgetIfIdle(lane: EndpointLane<J>): void {
    if (lane.inFlight > 0 || lane.waiting.length > 0) return;
    this.#endpoints.delete(lane.key);
    lane.client.ready.delete(lane);
    if (lane.client.inFlight === 0 && lane.client.waiting === 0) {
      this.#clients.delete(lane.client.id);
      this.#ready.delete(lane.client);
    }
  }
}
