import type { Pool } from "pg";
import { Coalescer } from "../../coalescer.js";

/** Optional fields are absent, never null, in domain records. */
export function optional<K extends string, V>(key: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * SQLSTATE classes 22 (data exception) and 23 (integrity constraint
 * violation): the statement's data was refused and nothing was written, so
 * its rows may be retried one by one to find the bad one. Anything else (a
 * lost connection) may have written: not retried.
 */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^2[23]/.test(code);
}

/** Reads by id made together, answered from one `id = ANY(...)` statement. */
export function readsById<Row extends { id: string }, T>(
  pool: Pool,
  table: "wh_notifications" | "wh_subscriptions",
  toRecord: (row: Row) => T,
): Coalescer<string, T | undefined> {
  return new Coalescer(
    async (ids: string[]) => {
      const { rows } = await pool.query<Row>({
        name: `${table}-by-ids`,
        text: `SELECT * FROM ${table} WHERE id = ANY($1::text[])`,
        values: [ids],
      });
      const byId = new Map(rows.map((row) => [row.id, toRecord(row)]));
      return ids.map((id) => byId.get(id));
    },
    { splitOn: isDataError },
  );
}
