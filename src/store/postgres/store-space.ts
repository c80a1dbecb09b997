import type { QueryConfig, QueryResultRow } from "pg";
import { StoreFullError } from "../../domain/errors.js";
import type { StoreSpace } from "../store-space.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";
import { inTransaction } from "./transaction.js";

/** SQLSTATE disk_full: PostgreSQL could not extend a file (ENOSPC), on a server as in PGlite. */
const DISK_FULL = "53100";

/** The error as a StoreFullError when it says the database's disk is full; unchanged otherwise. */
export function asStoreFull(error: unknown): unknown {
  if (!(error instanceof Error) || (error as { code?: unknown }).code !== DISK_FULL) return error;
  return new StoreFullError(error.message, { cause: error });
}

/**
 * Writes about a megabyte (some 130 pages of a temporary table, in the
 * database's own tablespace) and drops it: succeeds only with that much room
 * (a StoreFullError otherwise).
 */
export async function probeSpace(pool: SqlPool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("CREATE TEMPORARY TABLE wh_space_probe (n integer) ON COMMIT DROP");
    await client.query("INSERT INTO wh_space_probe SELECT generate_series(1, 30000)");
  }).catch((error: unknown) => {
    throw asStoreFull(error);
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
