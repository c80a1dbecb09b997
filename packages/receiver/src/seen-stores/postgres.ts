import { randomUUID } from "node:crypto";
import type { ClaimResult, SeenStore } from "../seen-store.js";

/**
 * Any PostgreSQL client with a `query(text, values)` method: a `pg` Pool or
 * Client, `postgres`'s `unsafe` wrapped, PGlite. The store uses the rows a
 * statement returns and nothing else, so the driver is the application's choice.
 */
export interface SqlClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

export interface PostgresSeenStoreOptions {
  /** The table, optionally schema-qualified (`webhooks.receiver_jobs`). Default `webhook_receiver_jobs`. */
  table?: string;
}

export const DEFAULT_TABLE = "webhook_receiver_jobs";

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The table as a quoted SQL name; anything but one or two plain identifiers is refused. */
function quotedTable(table: string): string {
  const parts = table.split(".");
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new TypeError(`table: expected an identifier or schema.identifier of letters, digits and _, got ${JSON.stringify(table)}`);
  }
  return parts.map((part) => `"${part}"`).join(".");
}

/** The table the store needs; `ensureTable()` runs it, or put it in your migrations. */
export function seenTableDdl(table = DEFAULT_TABLE): string {
  return `CREATE TABLE IF NOT EXISTS ${quotedTable(table)} (
  job_key       text PRIMARY KEY,      -- X-JobId (or the body's SHA-256 with deduplicateBy: "body")
  claim_token   text,                  -- the live claim's token; NULL once processed
  claimed_until timestamptz,           -- when that claim lapses
  processed_at  timestamptz            -- set once the handler succeeded
)`;
}

/**
 * Processed jobs in PostgreSQL: shared by every receiver instance and kept
 * across restarts. Claims are one atomic statement — `INSERT … ON CONFLICT`
 * that takes the row only when it is new or its claim lapsed — and the lease
 * runs on the database's clock, so instances with drifting clocks agree.
 * Rows stay until `prune` removes them.
 */
export class PostgresSeenStore implements SeenStore {
  readonly #client: SqlClient;
  readonly #ddl: string;
  readonly #claimSql: string;
  readonly #commitSql: string;
  readonly #releaseSql: string;
  readonly #pruneSql: string;

  constructor(client: SqlClient, options: PostgresSeenStoreOptions = {}) {
    if (typeof client?.query !== "function") throw new TypeError("client: expected an object with a query(text, values) method");
    this.#client = client;
    const table = quotedTable(options.table ?? DEFAULT_TABLE);
    this.#ddl = seenTableDdl(options.table ?? DEFAULT_TABLE);
    // The trailing SELECT reads the snapshot from before the INSERT: it answers
    // for the row that blocked the claim. A row another claimant inserted and
    // committed during this statement is not in that snapshot; no row then
    // reads as "in_progress", which is what it is.
    this.#claimSql = `WITH claimed AS (
  INSERT INTO ${table} AS seen (job_key, claim_token, claimed_until)
  VALUES ($1, $2, clock_timestamp() + $3::float8 * interval '1 millisecond')
  ON CONFLICT (job_key) DO UPDATE SET claim_token = excluded.claim_token, claimed_until = excluded.claimed_until
    WHERE seen.processed_at IS NULL AND seen.claimed_until <= clock_timestamp()
  RETURNING 'claimed'::text AS state
)
SELECT state FROM claimed
UNION ALL
SELECT CASE WHEN processed_at IS NULL THEN 'in_progress' ELSE 'done' END FROM ${table}
  WHERE job_key = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`;
    // Whoever commits, the handler ran: the job is processed even if this
    // claim had lapsed and another instance holds the row now.
    this.#commitSql = `INSERT INTO ${table} AS seen (job_key, processed_at) VALUES ($1, clock_timestamp())
ON CONFLICT (job_key) DO UPDATE SET processed_at = coalesce(seen.processed_at, excluded.processed_at), claim_token = NULL, claimed_until = NULL`;
    this.#releaseSql = `DELETE FROM ${table} WHERE job_key = $1 AND claim_token = $2 AND processed_at IS NULL`;
    this.#pruneSql = `WITH pruned AS (
  DELETE FROM ${table} WHERE processed_at < clock_timestamp() - $1::float8 * interval '1 millisecond' RETURNING 1
) SELECT count(*)::int AS count FROM pruned`;
  }

  /**
   * Creates the table unless it exists (the DDL is `seenTableDdl()`). Safe
   * when several instances start at once: PostgreSQL's `IF NOT EXISTS` is not,
   * so the loser's error is caught inside the same statement (a duplicate key
   * in the catalog, or its table or row type "already exists", depending on
   * where the two met).
   */
  async ensureTable(): Promise<void> {
    await this.#client.query(`DO $ensure$ BEGIN
${this.#ddl};
EXCEPTION WHEN unique_violation OR duplicate_table OR duplicate_object THEN NULL;
END $ensure$`);
  }

  async claim(key: string, leaseMs: number): Promise<ClaimResult> {
    const token = randomUUID();
    const { rows } = await this.#client.query(this.#claimSql, [key, token, leaseMs]);
    const state = (rows[0] as { state?: string } | undefined)?.state;
    if (state === "claimed") return { state, token };
    if (state === "done") return { state };
    return { state: "in_progress" };
  }

  async commit(key: string, _token: string): Promise<void> {
    await this.#client.query(this.#commitSql, [key]);
  }

  async release(key: string, token: string): Promise<void> {
    await this.#client.query(this.#releaseSql, [key, token]);
  }

  /**
   * Forgets jobs processed more than `olderThanMs` ago; returns how many. Run
   * it now and then, with at least the receiver's tolerance (plus 5 min of
   * clock skew): a replay of a forgotten job inside the tolerance would run
   * the handler again.
   */
  async prune(olderThanMs: number): Promise<number> {
    const { rows } = await this.#client.query(this.#pruneSql, [olderThanMs]);
    return (rows[0] as { count: number } | undefined)?.count ?? 0;
  }
}
