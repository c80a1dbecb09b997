import type { Pool } from "pg";

/** Agenda's jobs table, as @agendajs/postgres-backend creates it. */
const AGENDA_TABLE = "agenda_jobs";

/**
 * Hands notifications to Agenda in one statement: claims those not yet
 * scheduled and inserts one due job each (the rows `agenda.now()` would write
 * a round trip at a time). Claim and insert commit together, so a failure
 * leaves both undone for the sweep, and two sweeps never queue one twice.
 * Returns the new job ids.
 */
export function createPostgresDeliveryScheduler(pool: Pool) {
  return async (notificationIds: readonly string[], jobName: string, lastModifiedBy: string): Promise<string[]> => {
    if (notificationIds.length === 0) return [];
    const { rows } = await pool.query<{ id: string }>(
      `WITH claimed AS (
         UPDATE wh_notifications SET scheduled = true WHERE id = ANY($1::text[]) AND NOT scheduled RETURNING id
       )
       INSERT INTO "${AGENDA_TABLE}" (name, priority, next_run_at, type, data, disabled, fork, last_modified_by)
       SELECT $2, 0, now(), 'normal', jsonb_build_object('notificationId', claimed.id), false, false, $3 FROM claimed
       RETURNING id`,
      [notificationIds, jobName, lastModifiedBy],
    );
    return rows.map((row) => String(row.id));
  };
}
