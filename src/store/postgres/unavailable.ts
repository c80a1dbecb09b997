import type { QueryConfig, QueryResult, QueryResultRow } from "pg";
import { StoreUnavailableError } from "../../domain/errors.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";

/**
 * SQLSTATEs of a server going away or refusing connections: class 08
 * (connection exception), 57P01-57P03 (admin shutdown, crash shutdown,
 * cannot connect now) and 53300 (too many connections).
 */
const UNAVAILABLE_STATES = /^(08|57P0[123]$|53300$)/;
/** What Node and pg say when the socket itself fails. */
const UNAVAILABLE_ERRNOS = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/** The error as a StoreUnavailableError when it says the database can't be reached; unchanged otherwise. */
export function asUnavailable(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  const unreachable =
    (typeof code === "string" && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_ERRNOS.has(code))) ||
    /Connection terminated|not currently accepting connections|timeout exceeded when trying to connect|Query read timeout/i.test(
      error.message,
    );
  return unreachable ? new StoreUnavailableError(`the database is unreachable: ${error.message}`, { cause: error }) : error;
}

const rethrow = (error: unknown): never => {
  throw asUnavailable(error);
};

/** The pool, its failures to reach the database reported as StoreUnavailableError. */
export function reportingUnavailable(pool: SqlPool): SqlPool {
  return {
    query<R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>> {
      return pool.query<R>(config, values).catch(rethrow);
    },
    async connect(): Promise<SqlClient> {
      const client = await pool.connect().catch(rethrow);
      return {
        query: <R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]) =>
          client.query<R>(config, values).catch(rethrow),
        release: (destroy) => client.release(destroy),
      };
    },
  };
}
