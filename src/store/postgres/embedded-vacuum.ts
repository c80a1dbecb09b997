import type { QueryResult, QueryResultRow } from "pg";

/**
 * Every how many rounds a round vacuums the whole database, system
 * catalogs included, instead of our tables alone: with a round every 10 s,
 * once an hour.
 */
export const WHOLE_DATABASE_EVERY_ROUNDS = 360;

/**
 * Our tables with rows inserted or died since their last VACUUM: every
 * table in the session's schemas (the embedded database is the service's
 * alone), as PostgreSQL's statistics say, a second or so behind.
 */
const CHANGED_TABLES = `
  SELECT format('%I.%I', schemaname, relname) AS name
  FROM pg_stat_user_tables
  WHERE schemaname = ANY (current_schemas(false)) AND (n_dead_tup > 0 OR n_ins_since_vacuum > 0)
  ORDER BY 1`;

/**
 * One round of the embedded database's VACUUM, which PGlite (no autovacuum)
 * leaves to us. PGlite is one session: while a VACUUM runs, every other
 * statement waits for it. So a round vacuums each of our tables that
 * changed (under load: the jobs, the notifications and their attempts) in
 * a statement of its own, and statements that queued meanwhile run between
 * them, instead of waiting for all of them at once. The system catalogs,
 * whose rows change only with the schema, are left to a whole-database
 * VACUUM every `WHOLE_DATABASE_EVERY_ROUNDS` rounds (round 0 among them,
 * after the migrations' changes), which also advances the database's
 * oldest transaction id (`SKIP_DATABASE_STATS` leaves that to it): a
 * VACUUM of the whole database every 10 s spent 40-70 ms on the catalogs
 * alone under load, long enough to show in the tail of every delivery
 * waiting behind it. An hour is about 7 million transactions at 2,000 a
 * second, far from the 200 million at which PostgreSQL would want its
 * tables frozen.
 */
export async function vacuumRound(query: (text: string) => Promise<QueryResult<QueryResultRow>>, round: number): Promise<void> {
  if (round % WHOLE_DATABASE_EVERY_ROUNDS === 0) {
    await query("VACUUM");
    return;
  }
  const { rows } = await query(CHANGED_TABLES);
  for (const { name } of rows as Array<{ name: string }>) await query(`VACUUM (SKIP_DATABASE_STATS) ${name}`);
}
