import type { QueryConfig, QueryResult, QueryResultRow } from "pg";

/** A connection taken from the pool, for statements that must share one (a transaction). */
export interface SqlClient {
  query<R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>>;
  /** Gives the connection back; `true` or an error if it must not be reused. */
  release(destroy?: boolean | Error): void;
}

/**
 * What the SQL adapters use of a pool: pg's Pool against a server, or the
 * embedded PGlite pool (embedded-pool.ts).
 */
export interface SqlPool {
  query<R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>>;
  connect(): Promise<SqlClient>;
}
