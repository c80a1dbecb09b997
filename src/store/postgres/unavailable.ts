import type { Pool, QueryConfig, QueryResult, QueryResultRow } from "pg";
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
    /Connection terminated|not queryable|not currently accepting connections|timeout exceeded when trying to connect|Query read timeout/i.test(
      error.message,
    );
  return unreachable ? new StoreUnavailableError(`the database is unreachable: ${error.message}`, { cause: error }) : error;
}

const rethrow = (error: unknown): never => {
  throw asUnavailable(error);
};

/**
 * The pool, its failures to reach the database reported as
 * StoreUnavailableError. A connection lost while a caller holds it (in a
 * transaction) is an "error" event on its client, which pg's pool listens
 * for only on idle clients: unheard, it would take the process down. The
 * statement under way fails with the loss (and is reported like any); a
 * client that lost its connection, by either sign, is released as broken,
 * whatever its holder says (the server's "terminating connection" can fail
 * the statement before the socket's end is seen).
 */
export function reportingUnavailable(pool: Pool): SqlPool {
  return {
    query<R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>> {
      return pool.query<R>(config, values).catch(rethrow);
    },
    async connect(): Promise<SqlClient> {
      const client = await pool.connect().catch(rethrow);
      let lost: Error | undefined;
      const onLost = (error: Error) => {
        lost = error;
      };
      client.on("error", onLost);
      return {
        query: <R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]) =>
          client.query<R>(config, values).catch((error: unknown) => {
            const reported = asUnavailable(error);
            if (reported instanceof StoreUnavailableError) lost ??= reported;
            throw reported;
          }),
        release: (destroy) => {
          client.off("error", onLost);
          client.release(lost ?? destroy);
        },
      };
    },
  };
}
