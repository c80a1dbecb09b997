import { endpointOf } from "../../domain/endpoint.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";
import { inTransaction, MIGRATION_LOCK } from "./transaction.js";

/** Taken over a thousand at a time. */
const TAKE_OVER_BATCH = 1000;

interface Orphan {
  id: string;
  client_id: string;
  url: string | null;
  next_run_at: Date | null;
  fail_count: number | null;
}

/**
 * Pending notifications with no job, and what an older version knew of them
 * (the jobs it kept in Agenda's own table, when there is one): notifications
 * it accepted but never queued (a crash between the two), and those whose
 * job is still in `agenda_jobs`.
 */
function orphans(fromAgendaTable: boolean): string {
  const legacy = fromAgendaTable
    ? `LEFT JOIN agenda_jobs a ON a.name = 'deliver-notification' AND a.data->>'notificationId' = n.id`
    : "LEFT JOIN (SELECT NULL::timestamptz AS next_run_at, NULL::int AS fail_count) a ON false";
  return `
    SELECT n.id, n.client_id, s.url, a.next_run_at, a.fail_count
    FROM wh_notifications n LEFT JOIN wh_subscriptions s ON s.id = n.subscription_id ${legacy}
    WHERE n.status = 'pending' AND ${fromAgendaTable ? "(NOT n.scheduled OR a.id IS NOT NULL)" : "NOT n.scheduled"}
      AND NOT EXISTS (SELECT 1 FROM wh_delivery_jobs j WHERE j.id = n.id)
    LIMIT ${TAKE_OVER_BATCH}`;
}

/**
 * Gives a job to every pending notification an older version left without
 * one (the job table itself is made by a migration, schema.ts): due when its
 * old job was due (now, for one never queued), unlocked, its endpoint read
 * from its subscription's URL as any new job's is (endpoint.ts). One whose
 * subscription is gone gets a job too: its attempt fails it as deleted.
 */
export async function prepareJobTable(pool: SqlPool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    const { rows } = await client.query<{ legacy: boolean }>("SELECT to_regclass('agenda_jobs') IS NOT NULL AS legacy");
    const fromAgendaTable = rows[0]?.legacy === true;
    while ((await takeOver(client, orphans(fromAgendaTable))) === TAKE_OVER_BATCH);
    if (fromAgendaTable) await client.query("DELETE FROM agenda_jobs WHERE name = 'deliver-notification'");
    // A job left without a schedule would never be due again: it is due now.
    await client.query("UPDATE wh_delivery_jobs SET next_run_at = now() WHERE next_run_at IS NULL AND locked_at IS NULL");
    // Every notification is queued as it is stored now; the flag stays true.
    await client.query("UPDATE wh_notifications SET scheduled = true WHERE NOT scheduled");
  });
}

async function takeOver(client: SqlClient, select: string): Promise<number> {
  const { rows } = await client.query<Orphan>(select);
  if (rows.length === 0) return 0;
  await client.query(
    `INSERT INTO wh_delivery_jobs (id, endpoint, client_id, next_run_at, fail_count)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int[])`,
    [
      rows.map((row) => row.id),
      rows.map((row) => endpointOf(row.client_id, row.url ?? "")),
      rows.map((row) => row.client_id),
      rows.map((row) => row.next_run_at ?? new Date()),
      rows.map((row) => row.fail_count ?? 0),
    ],
  );
  return rows.length;
}
