import type { Pool } from "pg";

/** Agenda's jobs table, as @agendajs/postgres-backend creates it. */
const AGENDA_TABLE = "agenda_jobs";

/**
 * Inserts many one-time Agenda jobs, due now, in one statement: the rows
 * `agenda.now()` would write one round trip (and one NOTIFY) at a time.
 * Returns the new job ids.
 */
export function createPostgresJobBatcher(pool: Pool) {
  return async (name: string, data: readonly object[], lastModifiedBy: string): Promise<string[]> => {
    if (data.length === 0) return [];
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO "${AGENDA_TABLE}" (name, priority, next_run_at, type, data, disabled, fork, last_modified_by)
       SELECT $1, 0, now(), 'normal', item::jsonb, false, false, $3 FROM unnest($2::text[]) AS item
       RETURNING id`,
      [name, data.map((item) => JSON.stringify(item)), lastModifiedBy],
    );
    return rows.map((row) => String(row.id));
  };
}
