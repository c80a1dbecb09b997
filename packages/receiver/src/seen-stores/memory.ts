import { randomUUID } from "node:crypto";
import { DEFAULT_TOLERANCE_MS, MAX_CLOCK_SKEW_MS } from "../freshness.js";
import type { ClaimResult, SeenStore } from "../seen-store.js";

export interface MemorySeenStoreOptions {
  /**
   * How long a processed job is remembered. Keep it at least the receiver's
   * tolerance (plus the 5 min of clock skew allowed): a replay of a forgotten
   * job id inside the tolerance would run the handler again. Default: the
   * default tolerance plus that skew, 30 h 5 min.
   */
  ttlMs?: number;
  /** At most this many jobs are kept; past it the least recently seen processed ones are forgotten first. Default 100,000. */
  maxEntries?: number;
  /** The clock, in epoch milliseconds. */
  now?: () => number;
}

/**
 * The modes of one job's entry, and how it moves between them:
 *
 * - (absent)  —claim→ CLAIMED
 * - CLAIMED   —claim before `leaseUntil`→ CLAIMED, answered "in_progress"
 * - CLAIMED   —claim at or after `leaseUntil`→ CLAIMED with a new token (the old claim lapsed)
 * - CLAIMED   —commit→ DONE (any token: the handler did run, so the job is processed)
 * - CLAIMED   —release with its own token→ (absent); with another token: unchanged
 * - DONE      —claim before `expiresAt`→ DONE, answered "done"
 * - DONE      —at `expiresAt`, or evicted as least recently seen past `maxEntries`→ (absent)
 *
 * A CLAIMED entry is never evicted: that would let a duplicate run while the
 * first is still in progress. Map order is recency order: every touch moves an
 * entry to the end, so eviction walks from the front.
 */
type Entry = { mode: "CLAIMED"; token: string; leaseUntil: number } | { mode: "DONE"; expiresAt: number };

/** A bounded LRU with a TTL, for a receiver that runs as one process. Forgets everything on restart. */
export class MemorySeenStore implements SeenStore {
  readonly #entries = new Map<string, Entry>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: MemorySeenStoreOptions = {}) {
    this.#ttlMs = options.ttlMs ?? DEFAULT_TOLERANCE_MS + MAX_CLOCK_SKEW_MS;
    this.#maxEntries = options.maxEntries ?? 100_000;
    this.#now = options.now ?? Date.now;
    if (!(this.#ttlMs > 0)) throw new TypeError("ttlMs must be above 0");
    if (!(Number.isInteger(this.#maxEntries) && this.#maxEntries > 0)) throw new TypeError("maxEntries must be a positive integer");
  }

  /** How many jobs are remembered (claimed or processed). */
  get size(): number {
    return this.#entries.size;
  }

  async claim(key: string, leaseMs: number): Promise<ClaimResult> {
    const now = this.#now();
    const entry = this.#current(key, now);
    if (entry?.mode === "DONE") {
      this.#touch(key, entry);
      return { state: "done" };
    }
    if (entry?.mode === "CLAIMED" && now < entry.leaseUntil) return { state: "in_progress" };
    const token = randomUUID();
    this.#touch(key, { mode: "CLAIMED", token, leaseUntil: now + leaseMs });
    this.#evict();
    return { state: "claimed", token };
  }

  async commit(key: string, _token: string): Promise<void> {
    this.#touch(key, { mode: "DONE", expiresAt: this.#now() + this.#ttlMs });
    this.#evict();
  }

  async release(key: string, token: string): Promise<void> {
    const entry = this.#entries.get(key);
    if (entry?.mode === "CLAIMED" && entry.token === token) this.#entries.delete(key);
  }

  /** The entry, unless it is a processed job past its TTL (which is dropped here). */
  #current(key: string, now: number): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry?.mode === "DONE" && now >= entry.expiresAt) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  #touch(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#entries.set(key, entry);
  }

  #evict(): void {
    if (this.#entries.size <= this.#maxEntries) return;
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries) return;
      if (entry.mode === "DONE") this.#entries.delete(key);
    }
  }
}
