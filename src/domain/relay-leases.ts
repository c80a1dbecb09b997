import type { SubscriptionStore } from "./ports.js";

/**
 * How long a temporary relay subscription outlives the last listener stream
 * that named it (RELAY_LEASE): a listener that crashed, or whose service
 * went away, does not leave deliveries going to nobody for longer.
 */
export const RELAY_LEASE_MS = 45_000;

/** Leases one sweep ends at most; the next sweep, a third of a lease later, takes the rest. */
const SWEEP_BATCH = 100;

export interface RelayLeasesDeps {
  store: Pick<SubscriptionStore, "renewLeases" | "listLeaseEnded" | "deleteLeaseEnded">;
  leaseMs: number;
  onError: (error: unknown) => void;
  /** Told of each subscription a sweep deleted. */
  onEnded?: (subscriptionId: string) => void;
  now?: () => Date;
}

/** What a listener's stream holds while it is open. */
export interface HeldLeases {
  release(): void;
}

/**
 * The leases of temporary relay subscriptions. A stream that names them
 * holds their leases: renewed when it opens and every third of a lease
 * while it stays open, on whichever instance serves it. Every instance
 * sweeps every third of a lease, deleting each subscription whose lease
 * ended: at most about a lease and a third after its last stream closed.
 * The store deletes only a lease still ended, so a stream that reopened
 * meanwhile keeps its subscription.
 */
export class RelayLeases {
  readonly #deps: RelayLeasesDeps;
  #sweeper: NodeJS.Timeout | undefined;
  #sweep: Promise<void> | undefined;

  constructor(deps: RelayLeasesDeps) {
    this.#deps = deps;
  }

  /** Renews these subscriptions' leases now and while held; the first renewal is awaited. */
  async hold(subscriptionIds: readonly string[]): Promise<HeldLeases> {
    if (subscriptionIds.length === 0) return { release: () => {} };
    const renew = () => this.#deps.store.renewLeases(subscriptionIds, this.#endFromNow());
    await renew();
    const timer = setInterval(() => void renew().catch(this.#deps.onError), this.#renewEveryMs());
    timer.unref();
    return { release: () => clearInterval(timer) };
  }

  start(): void {
    this.#sweeper ??= setInterval(() => {
      this.#sweep ??= this.sweep()
        .catch(this.#deps.onError)
        .finally(() => {
          this.#sweep = undefined;
        });
    }, this.#renewEveryMs());
    this.#sweeper.unref();
  }

  /** No new sweep starts; resolves once the one under way has finished. */
  async stop(): Promise<void> {
    clearInterval(this.#sweeper);
    await this.#sweep;
  }

  /** Deletes the subscriptions whose lease ended (their pending notifications end as failed, as on any delete). */
  async sweep(): Promise<void> {
    const now = this.#deps.now?.() ?? new Date();
    for (const id of await this.#deps.store.listLeaseEnded(now, SWEEP_BATCH)) {
      if (await this.#deps.store.deleteLeaseEnded(id, now)) this.#deps.onEnded?.(id);
    }
  }

  #endFromNow(): Date {
    return new Date((this.#deps.now?.() ?? new Date()).getTime() + this.#deps.leaseMs);
  }

  #renewEveryMs(): number {
    return Math.max(100, Math.floor(this.#deps.leaseMs / 3));
  }
}
