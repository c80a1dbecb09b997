import type { LaneJob } from "./fair-lanes.js";

/**
 * Endpoints and clients that may have due jobs in the source the feed did
 * not take: their budget passed them over, or left them out altogether, or
 * their jobs were handed back. When one of their jobs finishes here (room
 * again), the feed fetches. A fetch that read every due job it could see
 * tells exactly which are still left behind, so the sets follow the active
 * endpoints and clients rather than grow.
 */
export class LeftBehind {
  #endpoints = new Set<string>();
  #clients = new Set<string>();

  /** `endpoint` (and `clientId`, if given) left due jobs in the source. */
  add(endpoint: string | undefined, clientId?: string): void {
    if (endpoint !== undefined) this.#endpoints.add(endpoint);
    if (clientId !== undefined) this.#clients.add(clientId);
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

  /**
   * A fetch read every due job it could see: what is left behind now is
   * exactly what it passed over, and what it was told to leave out (it did
   * not read those).
   */
  resetTo(left: { endpoints: Iterable<string>; clients: Iterable<string> }): void {
    this.#endpoints = new Set(left.endpoints);
    this.#clients = new Set(left.clients);
  }

  get size(): { endpoints: number; clients: number } {
    return { endpoints: this.#endpoints.size, clients: this.#clients.size };
  }
}
