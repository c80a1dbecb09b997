import { rm } from "node:fs/promises";
import test from "ava";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { EVERY_RELATION_EVERY_ROUNDS, vacuumRound } from "../../src/store/postgres/embedded-vacuum.js";
import { embeddedDataDir } from "../helpers/stores.js";

async function open(t: import("ava").ExecutionContext): Promise<EmbeddedPool> {
  const dir = await embeddedDataDir("wh-embedded-vacuum-");
  const pool = await EmbeddedPool.open(dir, [], (error) => t.fail(`embedded database failed: ${error.message}`));
  t.teardown(async () => {
    await pool.end();
    await rm(dir, { recursive: true, force: true });
  });
  await pool.query("CREATE TABLE jobs (id text PRIMARY KEY)");
  await pool.query("CREATE TABLE notes (id text PRIMARY KEY)");
  return pool;
}

/** Waits until PostgreSQL's statistics (flushed about once a second) count the rows written to `table`. */
async function changesCounted(pool: EmbeddedPool, table: string): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ n: number }>("SELECT n_ins_since_vacuum::int AS n FROM pg_stat_user_tables WHERE relname = $1", [
      table,
    ]);
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs one round on `pool`, answering the statements it sent. */
async function roundOn(pool: EmbeddedPool, round: number): Promise<string[]> {
  const statements: string[] = [];
  await vacuumRound((text) => {
    statements.push(text);
    return pool.query(text);
  }, round);
  return statements;
}

/** How often each table was vacuumed: ours and one system catalog. */
async function vacuumCounts(pool: EmbeddedPool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ relname: string; n: number }>(
    "SELECT relname, vacuum_count::int AS n FROM pg_stat_all_tables WHERE relname IN ('jobs', 'notes', 'pg_class')",
  );
  return Object.fromEntries(rows.map((row) => [row.relname, row.n]));
}

test("a round vacuums each of our tables that changed in a statement of its own, and leaves the others and the system catalogs alone", async (t) => {
  const pool = await open(t);
  await pool.query("CREATE TABLE still (id text PRIMARY KEY)");
  await pool.query("INSERT INTO jobs VALUES ('a'), ('b')");
  await pool.query("INSERT INTO notes VALUES ('a')");
  await changesCounted(pool, "jobs");
  await changesCounted(pool, "notes");
  const before = await vacuumCounts(pool);
  const vacuums = (statements: string[]) => statements.filter((text) => text.startsWith("VACUUM"));
  t.deepEqual(vacuums(await roundOn(pool, 1)), ["VACUUM (SKIP_DATABASE_STATS) public.jobs", "VACUUM (SKIP_DATABASE_STATS) public.notes"]);
  t.deepEqual(await vacuumCounts(pool), { jobs: (before.jobs ?? 0) + 1, notes: (before.notes ?? 0) + 1, pg_class: before.pg_class ?? 0 });
  t.deepEqual(vacuums(await roundOn(pool, 2)), [], "vacuumed, nothing has changed since");
});

/** Each relation's vacuum count: every table, system catalogs and TOAST tables included. */
async function everyVacuumCount(pool: EmbeddedPool): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ name: string; n: number }>(
    "SELECT format('%I.%I', schemaname, relname) AS name, vacuum_count::int AS n FROM pg_stat_all_tables",
  );
  return new Map(rows.map((row) => [row.name, row.n]));
}

/** The database's oldest unfrozen transaction id, as a number. */
async function frozenXid(pool: EmbeddedPool): Promise<number> {
  const { rows } = await pool.query<{ xid: string }>(
    "SELECT datfrozenxid::text AS xid FROM pg_database WHERE datname = current_database()",
  );
  return Number(rows[0]?.xid);
}

test("round 0 and every EVERY_RELATION_EVERY_ROUNDS-th vacuum every relation, the system catalogs included", async (t) => {
  const pool = await open(t);
  for (const round of [0, EVERY_RELATION_EVERY_ROUNDS, 2 * EVERY_RELATION_EVERY_ROUNDS]) {
    const before = await everyVacuumCount(pool);
    await roundOn(pool, round);
    const after = await everyVacuumCount(pool);
    const missed = [...after].filter(([name, n]) => n !== (before.get(name) ?? 0) + 1).map(([name]) => name);
    t.deepEqual(missed, [], `round ${round}: vacuumed once each`);
    t.true(after.has("pg_catalog.pg_class") && after.has("pg_catalog.pg_database") && after.has("public.jobs"));
  }
});

test("a round of every relation advances the database's oldest transaction id", async (t) => {
  const pool = await open(t);
  // Transactions of their own, each leaving rows with its id.
  for (let i = 0; i < 5; i++) await pool.query("INSERT INTO jobs VALUES ($1)", [`job-${i}`]);
  const before = await frozenXid(pool);
  await roundOn(pool, 0);
  t.true((await frozenXid(pool)) > before);
});

test("statements issued during a round run between its VACUUMs, not after all of them", async (t) => {
  const pool = await open(t);
  await pool.query("INSERT INTO jobs VALUES ('a')");
  await pool.query("INSERT INTO notes VALUES ('a')");
  await changesCounted(pool, "jobs");
  await changesCounted(pool, "notes");
  const finished: string[] = [];
  const round = vacuumRound(async (text) => {
    const result = await pool.query(text);
    if (text.startsWith("VACUUM")) finished.push(text);
    return result;
  }, 1);
  // Queued behind the round's first statement (the list of tables), before its first VACUUM is.
  await pool.query("SELECT 1");
  finished.push("SELECT 1");
  await round;
  t.deepEqual(finished, ["SELECT 1", "VACUUM (SKIP_DATABASE_STATS) public.jobs", "VACUUM (SKIP_DATABASE_STATS) public.notes"]);
});
