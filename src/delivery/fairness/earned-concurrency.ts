/** What the lanes ask of a concurrency limit: how many may run, and that one started or finished. */
export interface ConcurrencyLimit {
  /** The limit of a key with nothing in flight. */
  readonly floor: number;
  /** How many requests of `key` may be in flight now. */
  limit(key: string): number;
  /** A request of `key` starts; answers its start time, for `finished`. */
  started(key: string): number;
  /** That request is over; `more` says whether `key` had more waiting to run. */
  finished(key: string, startedAt: number, more: boolean): void;
  /** That request never ran (handed back): it frees its place and says nothing of the key's speed. */
  abandoned(key: string, startedAt: number): void;
}

interface Entry {
  limit: number;
  /** Start times of the requests in flight, oldest first. */
  inFlight: number[];
}

/**
 * Concurrency earned by answering fast. Every key (an endpoint, a client)
 * starts at `floor`. A request answered within `slowMs` while the key had
 * more waiting raises its limit by one, so a fast endpoint's limit doubles
 * with each round of requests, up to `ceiling`. A request slower than that,
 * or one still in flight past it, puts the key back to `floor`; it earns
 * its way up again only by answering fast.
 *
 * So a receiver that hangs takes no new request once one of its requests
 * has waited `slowMs`, and holds at most the limit it had earned when it
 * stopped answering: `floor` for one that was slow or new, more only for
 * one that was answering fast a moment before. A key with nothing in
 * flight is forgotten (memory follows the active keys); it starts again at
 * `floor`, and a fast one is back up within a few rounds.
 */
export class EarnedConcurrency implements ConcurrencyLimit {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly options: {
      floor: number;
      ceiling: number;
      slowMs: number;
      /** A monotonic clock in milliseconds (performance.now). */
      now: () => number;
    },
  ) {}

  get floor(): number {
    return this.options.floor;
  }

  limit(key: string): number {
    const entry = this.#entries.get(key);
    if (!entry) return this.options.floor;
    // A request in flight past slowMs holds the key to the floor; its finish (slow) then keeps it there.
    const oldest = entry.inFlight[0];
    return oldest !== undefined && this.options.now() - oldest > this.options.slowMs ? this.options.floor : entry.limit;
  }

  started(key: string): number {
    const at = this.options.now();
    let entry = this.#entries.get(key);
    if (!entry) {
      entry = { limit: this.options.floor, inFlight: [] };
      this.#entries.set(key, entry);
    }
    // Starts come in time order (`now` is monotonic), so the list stays sorted by pushing.
    entry.inFlight.push(at);
    return at;
  }

  finished(key: string, startedAt: number, more: boolean): void {
    const entry = this.#remove(key, startedAt);
    if (!entry) return;
    if (this.options.now() - startedAt > this.options.slowMs) entry.limit = this.options.floor;
    else if (more) entry.limit = Math.min(this.options.ceiling, entry.limit + 1);
    if (entry.inFlight.length === 0 && !more) this.#entries.delete(key);
  }

  abandoned(key: string, startedAt: number): void {
    const entry = this.#remove(key, startedAt);
    if (entry?.inFlight.length === 0 && entry.limit === this.options.floor) this.#entries.delete(key);
  }

  #remove(key: string, startedAt: number): Entry | undefined {
    const entry = this.#entries.get(key);
    const index = entry?.inFlight.indexOf(startedAt) ?? -1;
    if (index >= 0) entry?.inFlight.splice(index, 1);
    return entry;
  }
}

/** A limit that never moves (tests, and settings that fix it). */
export function fixedConcurrency(limit: number): ConcurrencyLimit {
  return new EarnedConcurrency({ floor: limit, ceiling: limit, slowMs: Number.POSITIVE_INFINITY, now: () => 0 });
}
