import type { Subscription } from "../domain/model.js";
import type { Cursor, SubscriptionStore } from "../domain/ports.js";

/** (client, event) pairs whose fan-out is kept; the least recently used go first. */
const DEFAULT_LIMIT = 1_000;

/**
 * A SubscriptionStore that keeps the answers of `listEnabledForEvent` (what
 * every publish reads), so that a publish spends no statement finding its
 * subscribers. Every write made through it drops the answers of the
 * subscription's client. A `fresh` read replaces the answer kept.
 *
 * A read during which any write finished is handed to its caller but not
 * kept: it may have been read before that write.
 *
 * On the embedded store, whose data directory one process holds at a time,
 * every write goes through it, so an answer is always the database's
 * current one. On a database other instances write to, their writes drop
 * nothing here: there the job store checks each fan-out as it inserts it
 * (fan-out-versions.ts) and refuses one that changed, and the publish reads
 * it fresh (FanOutChangedError); answers with no subscription, which no
 * insert checks, are not kept there (`keepEmpty: false`).
 */
export class FanOutCache implements SubscriptionStore {
  /** `client \0 event` → the enabled subscriptions, as the store answered; least recently used first. */
  readonly #fanOuts = new Map<string, { clientId: string; subscriptions: readonly Subscription[] }>();
  /** Writes finished so far. */
  #writes = 0;

  constructor(
    private readonly store: SubscriptionStore,
    private readonly options: {
      /** (client, event) pairs kept at most. */
      limit?: number;
      /**
       * Keep answers with no subscription. Not where other instances write:
       * a publish to nobody inserts nothing, so nothing would check it.
       */
      keepEmpty?: boolean;
    } = {},
  ) {}

  async listEnabledForEvent(clientId: string, event: string, options?: { fresh?: boolean }): Promise<Subscription[]> {
    const key = `${clientId}\u0000${event}`;
    const kept = this.#fanOuts.get(key);
    if (kept && !options?.fresh) {
      this.#fanOuts.delete(key);
      this.#fanOuts.set(key, kept);
      return kept.subscriptions as Subscription[];
    }
    const writesBefore = this.#writes;
    // Frozen: every publish of the event gets these very objects.
    const subscriptions = Object.freeze((await this.store.listEnabledForEvent(clientId, event)).map((s) => Object.freeze(s)));
    if (this.#writes === writesBefore && (subscriptions.length > 0 || this.options.keepEmpty !== false))
      this.#keep(key, clientId, subscriptions);
    // An answer not kept (empty, or read while a write finished) leaves no older one behind: a fresh read found it stale.
    else this.#fanOuts.delete(key);
    return subscriptions as Subscription[];
  }

  insert(subscription: Subscription): Promise<void> {
    return this.#writing(
      () => subscription.clientId,
      () => this.store.insert(subscription),
    );
  }

  update(subscription: Subscription, expectedUpdatedAt: Date): Promise<boolean> {
    return this.#writing(
      () => subscription.clientId,
      () => this.store.update(subscription, expectedUpdatedAt),
    );
  }

  delete(id: string): Promise<boolean> {
    return this.#writing(
      () => this.#clientOf(id),
      () => this.store.delete(id),
    );
  }

  markFailing(id: string, at: Date): Promise<Date | undefined> {
    return this.#writing(
      () => this.#clientOf(id),
      () => this.store.markFailing(id, at),
    );
  }

  markHealthy(id: string): Promise<void> {
    return this.#writing(
      () => this.#clientOf(id),
      () => this.store.markHealthy(id),
    );
  }

  disable(id: string, reason: string, at: Date): Promise<void> {
    return this.#writing(
      () => this.#clientOf(id),
      () => this.store.disable(id, reason, at),
    );
  }

  get(id: string): Promise<Subscription | undefined> {
    return this.store.get(id);
  }

  findByUrl(clientId: string, url: string): Promise<Subscription[]> {
    return this.store.findByUrl(clientId, url);
  }

  listByClient(clientId: string, limit: number, after?: Cursor): Promise<Subscription[]> {
    return this.store.listByClient(clientId, limit, after);
  }

  /**
   * Once the write is over (failed or not: it may have happened), the
   * answers of the client it touched go. Its client is looked up then: a
   * write by the id of a subscription kept nowhere here drops nothing, and a
   * read that kept it while the write ran is dropped now.
   */
  async #writing<T>(clientOf: () => string | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      this.#writes++;
      const clientId = clientOf();
      if (clientId !== undefined) {
        for (const [key, kept] of this.#fanOuts) if (kept.clientId === clientId) this.#fanOuts.delete(key);
      }
    }
  }

  /** The client of a subscription in a kept answer (each subscription is in at most one: it has one event). */
  #clientOf(id: string): string | undefined {
    for (const kept of this.#fanOuts.values()) if (kept.subscriptions.some((s) => s.id === id)) return kept.clientId;
    return undefined;
  }

  #keep(key: string, clientId: string, subscriptions: readonly Subscription[]): void {
    // Two reads of one event that missed together: the later answer replaces the earlier, evicting nothing.
    this.#fanOuts.delete(key);
    if (this.#fanOuts.size >= (this.options.limit ?? DEFAULT_LIMIT)) {
      const oldest = this.#fanOuts.keys().next().value;
      if (oldest !== undefined) this.#fanOuts.delete(oldest);
    }
    this.#fanOuts.set(key, { clientId, subscriptions });
  }
}
