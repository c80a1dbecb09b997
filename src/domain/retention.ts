import { type DeliveryStatsStore, hourRowsKeptMs, MINUTE_ROWS_KEPT_MS, stepStart } from "./delivery-stats.js";
import { ValidationError } from "./errors.js";
import type { ClientStore, NotificationStore } from "./ports.js";

/** The shortest retention accepted, the service's or a client's. */
export const MIN_RETENTION_MS = 1_000;
/** The longest: a hundred years, far past any need, and well inside what a timestamp can subtract. */
export const MAX_RETENTION_MS = 36_500 * 86_400_000;

/**
 * The longest an idempotency key is kept (Stripe's 24 hours): a repeat
 * within it is answered as the first publish; a client's retention, when
 * shorter, is the key's lifetime, so no key outlives what it names.
 */
export const IDEMPOTENCY_KEY_LIFETIME_MS = 86_400_000;

/** Rows (notifications, or keys) one purge statement deletes at most: on the embedded store, a few milliseconds of its one session. */
export const PURGE_BATCH = 100;

/** A retention, checked (from 1 s to a hundred years) and in whole milliseconds. */
export function checkRetention(ms: number, field: string): number {
  if (!Number.isFinite(ms) || ms < MIN_RETENTION_MS || ms > MAX_RETENTION_MS) {
    throw new ValidationError(`${field} must be from 1s to 36500d`, field);
  }
  return Math.round(ms);
}

/**
 * How long between purges: a minute, or half the shortest retention (the
 * service's or a client's) when that is shorter, at least a second; so a
 * notification outlives its retention by at most a minute, or by half of it.
 */
export function purgeIntervalMs(retentionMs: number): number {
  return Math.min(60_000, Math.max(1_000, Math.floor(retentionMs / 2)));
}

/** Rows one purge batch deleted, by table; a table left out: none. */
export type PurgedRows = Partial<Record<"notifications" | "attempts" | "idempotency_keys", number>>;

/** What a purge reports: the rows each batch deleted, and the oldest notification left. */
export interface RetentionObserver {
  purged(deleted: PurgedRows): void;
  oldestKept(createdAt: Date | undefined): void;
}

export interface RetentionPurgeDeps {
  store: Pick<NotificationStore, "purgeEnded" | "purgeExpiredKeys" | "oldestCreatedAt">;
  /** The delivery statistics, purged each round too (minute rows after a day; hour rows see hourRowsKeptMs), and merged. */
  stats: Pick<DeliveryStatsStore, "purge" | "merge">;
  /** Read each round for the shortest retention, which sets when the next round runs; deleted clients' data goes too. */
  clients: Pick<ClientStore, "list" | "purgeDeleted">;
  /** The service's retention (RETENTION); a client's own overrides it. */
  retentionMs: number;
  observer: RetentionObserver;
  onError: (error: unknown) => void;
  now?: () => Date;
}

/**
 * Deletes ended notifications past their retention, with their attempts,
 * idempotency keys past their lifetime (IDEMPOTENCY_KEY_LIFETIME_MS or the
 * retention, whichever is shorter), and whatever deleted clients
 * (ClientDirectory.delete) left,
 * every `purgeIntervalMs` of the shortest retention: a round deletes `PURGE_BATCH` at a time until a
 * batch finds fewer, each batch a statement of its own, so deliveries' own
 * statements run between them and nothing is held for the whole round.
 * Pending notifications are never deleted. Several instances may purge one
 * database at once (the store skips the rows another is deleting).
 */
export class RetentionPurge {
  readonly #deps: RetentionPurgeDeps;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #stopped = false;
  /** The shortest retention the last round saw. */
  #shortestMs: number;
  /** The last round purged a deleted client's data: there may be more (a job that was locked), so the next comes soon. */
  #deletedLeft = false;
  /** A round was asked for while one ran. */
  #again = false;

  constructor(deps: RetentionPurgeDeps) {
    this.#deps = deps;
    this.#shortestMs = deps.retentionMs;
  }

  start(): void {
    this.#schedule(0);
  }

  /** Runs a round now, or once the one under way ends: a client was deleted, and its data goes soon. */
  nudge(): void {
    if (this.#stopped) return;
    if (this.#round) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#schedule(0);
  }

  /** No new round starts; resolves once the round under way has finished its batch. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
  }

  /** One round: every batch past retention, then the oldest notification kept. */
  async round(): Promise<void> {
    const { store, retentionMs, observer } = this.#deps;
    const now = this.#deps.now?.() ?? new Date();
    for (;;) {
      const deleted = await store.purgeEnded(now, retentionMs, PURGE_BATCH);
      observer.purged(deleted);
      if (deleted.notifications < PURGE_BATCH || this.#stopped) break;
      // Whatever queued behind this batch goes before the next.
      await new Promise((resolve) => setImmediate(resolve));
    }
    while (!this.#stopped) {
      const keys = await store.purgeExpiredKeys(now, retentionMs, IDEMPOTENCY_KEY_LIFETIME_MS, PURGE_BATCH);
      observer.purged({ idempotency_keys: keys });
      if (keys < PURGE_BATCH) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Deleted clients' data, all of it, pending notifications too, batch by batch until a batch finds nothing.
    this.#deletedLeft = false;
    while (!this.#stopped) {
      const { notifications, attempts, others } = await this.#deps.clients.purgeDeleted(PURGE_BATCH);
      observer.purged({ notifications, attempts });
      if (notifications + attempts + others === 0) break;
      this.#deletedLeft = true;
      await new Promise((resolve) => setImmediate(resolve));
    }
    observer.oldestKept(await store.oldestCreatedAt());
    const own = (await this.#deps.clients.list()).map((client) => client.retentionMs ?? retentionMs);
    this.#shortestMs = Math.min(retentionMs, ...own);
    // Statistics outlive the notifications they count: kept as long as the longest retention, a week at least.
    // The steps that are over have their rows merged, so that reading a range reads one row per step and endpoint.
    const { stats } = this.#deps;
    await stats.purge("minute", new Date(now.getTime() - MINUTE_ROWS_KEPT_MS));
    await stats.purge("hour", new Date(now.getTime() - hourRowsKeptMs(Math.max(retentionMs, ...own))));
    for (const step of ["minute", "hour"] as const) await stats.merge(step, stepStart(now, step));
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#round = this.round()
        .catch(this.#deps.onError)
        .finally(() => {
          this.#round = undefined;
          const again = this.#again;
          this.#again = false;
          // purgeIntervalMs(0): its shortest, for a deleted client whose data is not all gone yet.
          this.#schedule(again ? 0 : this.#deletedLeft ? purgeIntervalMs(0) : purgeIntervalMs(this.#shortestMs));
        });
    }, delayMs);
    this.#timer.unref();
  }
}
