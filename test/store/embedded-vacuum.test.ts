import { rm } from "node:fs/promises";
import test from "ava";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { vacuumRound, WHOLE_DATABASE_EVERY_ROUNDS } from "../../src/store/postgres/embedded-vacuum.js";
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

test("round 0 and every WHOLE_DATABASE_EVERY_ROUNDS-th vacuum the whole database, the system catalogs included", async (t) => {
  const pool = await open(t);
  for (const round of [0, WHOLE_DATABASE_EVERY_ROUNDS, 2 * WHOLE_DATABASE_EVERY_ROUNDS]) {
    const before = await vacuumCounts(pool);
    t.deepEqual(await roundOn(pool, round), ["VACUUM"], `round ${round}`);
    const after = await vacuumCounts(pool);
    for (const table of ["jobs", "notes", "pg_class"]) t.is(after[table], (before[table] ?? 0) + 1, `round ${round}: ${table}`);
  }
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
