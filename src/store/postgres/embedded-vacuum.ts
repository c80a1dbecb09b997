import type { QueryResult, QueryResultRow } from "pg";

/**
 * Every how many rounds a round vacuums every relation of the database,
 * system catalogs included, instead of our changed tables alone: with a
 * round every 10 s, once an hour.
 */
export const EVERY_RELATION_EVERY_ROUNDS = 360;

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
 * Every relation that holds rows of its own, system catalogs (shared ones
 * too) and ours: what a VACUUM of the whole database processes, each TOAST
 * table with its owner. A partitioned table is left out: its partitions are
 * here, each a relation of its own (a VACUUM of the parent would do all of
 * them in one statement).
 */
const EVERY_RELATION = `
  SELECT format('%I.%I', n.nspname, c.relname) AS name
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
  ORDER BY 1`;

/**
 * One round of the embedded database's VACUUM, which PGlite (no autovacuum)
 * leaves to us. PGlite is one session: while a VACUUM runs, every other
 * statement waits for it. So a round vacuums each relation in a statement
 * of its own, and statements that queued meanwhile run between them,
 * instead of waiting for all of them at once. A round vacuums our tables
 * that changed (under load: the jobs, the notifications and their
 * attempts). Every `EVERY_RELATION_EVERY_ROUNDS` rounds (round 0 among
 * them, after the migrations' changes) it vacuums every relation instead,
 * the system catalogs too, whose rows change only with the schema, and
 * then advances the database's oldest transaction id (`ONLY_DATABASE_STATS`,
 * which each table's `SKIP_DATABASE_STATS` leaves to it): the catalogs
 * every 10 s cost 40-70 ms a round under load, long enough to show in the
 * tail of every delivery waiting behind it, and one whole-database VACUUM
 * held the session for as long as all relations took together. An hour is
 * about 7 million transactions at 2,000 a second, far from the 200 million
 * at which PostgreSQL would want its tables frozen.
 */
export async function vacuumRound(query: (text: string) => Promise<QueryResult<QueryResultRow>>, round: number): Promise<void> {
  const everyRelation = round % EVERY_RELATION_EVERY_ROUNDS === 0;
  const { rows } = await query(everyRelation ? EVERY_RELATION : CHANGED_TABLES);
  for (const { name } of rows as Array<{ name: string }>) await query(`VACUUM (SKIP_DATABASE_STATS) ${name}`);
  if (everyRelation) await query("VACUUM (ONLY_DATABASE_STATS)");
}
