import { DomainError } from "../../domain/errors.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";

/**
 * Runs `work` as one transaction on one connection: committed when it
 * resolves, rolled back when it throws. A connection whose work failed is
 * given back as broken, so no half-open transaction passes on to the next
 * user (on the embedded store, the one session everyone shares), unless
 * the work refused on purpose (a DomainError) and the rollback went
 * through: then the connection is as good as new, and keeps its prepared
 * statements.
 */
export async function inTransaction<T>(pool: SqlPool, work: (client: SqlClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    const rolledBack = await client.query("ROLLBACK").then(
      () => true,
      () => false,
    );
    broken = !(rolledBack && error instanceof DomainError);
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Transactions that change the schema take turns on this advisory lock: instances starting together don't race. */
export const MIGRATION_LOCK = 7_401_337;
