import type { QueryConfig, QueryResultRow } from "pg";
import { StoreFullError } from "../../domain/errors.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";
import { inTransaction } from "./transaction.js";

/** SQLSTATE disk_full: PostgreSQL could not extend a file (ENOSPC), on a server as in PGlite. */
const DISK_FULL = "53100";

/** The error as a StoreFullError when it says the database's disk is full; unchanged otherwise. */
export function asStoreFull(error: unknown): unknown {
  if (!(error instanceof Error) || (error as { code?: unknown }).code !== DISK_FULL) return error;
  return new StoreFullError(error.message, { cause: error });
}

/** Whether the store can write now, and if not, why: what /readyz reports of it. */
export interface SpaceReport {
  ok: boolean;
  reason?: string;
}

/**
 * Whether the store has room to write. Two modes:
 * - `roomy` (the start): nothing to do.
 * - `full`: entered when a statement fails for want of disk space
 *   (`noticed`); a probe writes about a megabyte every `probeEveryMs`, and
 *   the first probe that succeeds returns to `roomy`. A failure noticed
 *   while full only updates the reason.
 * Reads keep working while full, and so may writes that find room in pages
 * the database already holds: only the probe ends the mode, so readiness does
 * not flap with each call that happens to fit.
 */
export class StoreSpace {
  #full: { since: Date; reason: string; probe: NodeJS.Timeout } | undefined;
  #probing = false;
  #stopped = false;

  constructor(
    private readonly options: {
      /** Writes something that needs new disk space; rejects while there is none. */
      probe: () => Promise<void>;
      probeEveryMs: number;
      /** Told as the mode changes: the reason when it turns full, undefined when there is room again. */
      onChange: (reason: string | undefined) => void;
      now?: () => Date;
    },
  ) {}

  /** A statement failed for want of space: `full` from now until a probe succeeds. */
  noticed(error: StoreFullError): void {
    if (this.#stopped) return;
    if (this.#full) {
      this.#full.reason = error.detail;
      return;
    }
    const probe = setInterval(() => void this.#probe(), this.options.probeEveryMs);
    probe.unref();
    this.#full = { since: (this.options.now ?? (() => new Date()))(), reason: error.detail, probe };
    this.options.onChange(error.detail);
  }

  report(): SpaceReport {
    if (!this.#full) return { ok: true };
    return {
      ok: false,
      reason: `the store is full (since ${this.#full.since.toISOString()}): ${this.#full.reason}; free space on its disk`,
    };
  }

  /** Ends probing (the store is closing). */
  stop(): void {
    this.#stopped = true;
    if (this.#full) clearInterval(this.#full.probe);
  }

  async #probe(): Promise<void> {
    if (this.#probing || !this.#full) return;
    this.#probing = true;
    try {
      await this.options.probe();
      if (this.#stopped || !this.#full) return;
      clearInterval(this.#full.probe);
      this.#full = undefined;
      this.options.onChange(undefined);
    } catch (error) {
      const full = asStoreFull(error);
      if (full instanceof StoreFullError && this.#full) this.#full.reason = full.detail;
    } finally {
      this.#probing = false;
    }
  }
}

/**
 * Writes about a megabyte (some 130 pages of a temporary table, in the
 * database's own tablespace) and drops it: succeeds only with that much room.
 */
export async function probeSpace(pool: SqlPool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("CREATE TEMPORARY TABLE wh_space_probe (n integer) ON COMMIT DROP");
    await client.query("INSERT INTO wh_space_probe SELECT generate_series(1, 30000)");
  });
}

/** The pool, its disk-full failures reported as StoreFullError and told to `space`. */
export function watchingSpace(pool: SqlPool, space: StoreSpace): SqlPool {
  const rethrow = (error: unknown): never => {
    const full = asStoreFull(error);
    if (full instanceof StoreFullError) space.noticed(full);
    throw full;
  };
  return {
    query: <R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]) =>
      pool.query<R>(config, values).catch(rethrow),
    async connect(): Promise<SqlClient> {
      const client = await pool.connect();
      return {
        query: <R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]) =>
          client.query<R>(config, values).catch(rethrow),
        release: (destroy) => client.release(destroy),
      };
    },
  };
}
