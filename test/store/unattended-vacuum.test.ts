import test from "ava";
import pg from "pg";
import { UnattendedVacuum } from "../../src/store/postgres/unattended-vacuum.js";
import { reportingUnavailable } from "../../src/store/postgres/unavailable.js";
import { postgresOnly } from "../helpers/stores.js";

const postgres = postgresOnly(test, "vacuuming what autovacuum leaves alone");

if (postgres) {
  test("our tables autovacuum leaves alone are vacuumed and analyzed when autovacuum would, others' never; turning it on for them ends it", async (t) => {
    const store = await postgres.create();
    t.teardown(() => store.cleanup());
    const pool = new pg.Pool({ connectionString: store.env.DATABASE_URL as string, max: 2 });
    pool.on("error", () => {});
    t.teardown(() => pool.end());
    // Rows that came and went, in one of ours and in a table that is not ours, none looked after by autovacuum.
    // A large table with few dead rows is not vacuumed yet, as autovacuum would not (50 + 20 % of its live rows);
    // one that grew by 20 % is analyzed (50 + 10 % changed), not vacuumed (1,000 + 20 % inserted);
    // one that grew by 60 % is both.
    const client = await pool.connect();
    try {
      for (const table of ["wh_churn", "churn_other", "wh_large", "wh_grown", "wh_appended"]) {
        await client.query(`CREATE TABLE ${table} (id int PRIMARY KEY) WITH (autovacuum_enabled = false)`);
        await client.query(`INSERT INTO ${table} SELECT generate_series(1, 5000)`);
        // The inserts counted now (a session's counts reach the statistics at most once a second), so that
        // the VACUUM ANALYZE leaves nothing due: it sets the size autovacuum reckons with (pg_class.reltuples).
        await client.query("SELECT pg_stat_force_next_flush()");
        await client.query(`VACUUM (ANALYZE) ${table}`);
      }
      await client.query("DELETE FROM wh_churn");
      await client.query("DELETE FROM churn_other");
      await client.query("DELETE FROM wh_large WHERE id <= 500");
      await client.query("INSERT INTO wh_grown SELECT generate_series(5001, 6000)");
      await client.query("INSERT INTO wh_appended SELECT generate_series(5001, 8000)");
      // Counts reach pg_stat_user_tables when a backend flushes them (within a second or ten): now.
      await client.query("SELECT pg_stat_force_next_flush()");
      await client.query("SELECT 1");
    } finally {
      client.release();
    }
    // Beyond the VACUUM ANALYZE above.
    const counts = async (table: string) => {
      const { rows } = await pool.query<{ vacuums: number; analyzes: number }>(
        "SELECT vacuum_count::int - 1 AS vacuums, analyze_count::int - 1 AS analyzes FROM pg_stat_user_tables WHERE relname = $1",
        [table],
      );
      return rows[0] as { vacuums: number; analyzes: number };
    };
    const vacuums = async (table: string) => (await counts(table)).vacuums;
    const pending = await pool.query<{ relname: string; inserted: number; changed: number; dead: number }>(
      `SELECT relname, n_ins_since_vacuum::int AS inserted, n_mod_since_analyze::int AS changed, n_dead_tup::int AS dead
       FROM pg_stat_user_tables WHERE relname IN ('wh_large', 'wh_grown', 'wh_appended') ORDER BY relname`,
    );
    t.deepEqual(
      pending.rows,
      [
        { relname: "wh_appended", inserted: 3000, changed: 3000, dead: 0 },
        { relname: "wh_grown", inserted: 1000, changed: 1000, dead: 0 },
        { relname: "wh_large", inserted: 0, changed: 500, dead: 500 },
      ],
      "what each table has since its VACUUM ANALYZE, against 5,000 rows: 1,050 dead, 2,000 inserted or 550 changed is due",
    );
    const heard: string[][] = [];
    const errors: Error[] = [];
    const vacuum = UnattendedVacuum.start(reportingUnavailable(pool), 50, {
      onUnattended: (tables) => heard.push(tables),
      onError: (error) => errors.push(error),
      onRecovered: () => {},
    });
    t.teardown(() => vacuum.stop());

    const until = async (what: string, done: () => Promise<boolean> | boolean) => {
      const deadline = Date.now() + 10_000;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`not within 10 s: ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const deadIn = async (table: string) =>
      (await pool.query<{ n: number }>("SELECT n_dead_tup::int AS n FROM pg_stat_user_tables WHERE relname = $1", [table])).rows[0]?.n;
    // A VACUUM leaves the rows an older snapshot elsewhere on the server may still see (other tests'
    // transactions on a shared server); a later round, finding them still due, takes them.
    await until(
      "wh_churn vacuumed of its dead rows",
      async () => (await vacuums("wh_churn")) > 0 && (await counts("wh_churn")).analyzes > 0 && (await deadIn("wh_churn")) === 0,
    );
    t.true(heard[0]?.includes("public.wh_churn"), JSON.stringify(heard));
    t.false(heard.flat().some((name) => name.includes("churn_other")));
    t.is(await vacuums("churn_other"), 0, "a table that is not ours is left alone");
    t.is(await vacuums("wh_large"), 0, "a table with too few dead rows for autovacuum is left for later");
    t.true(heard[0]?.includes("public.wh_large"), "though it is named among those the service looks after");
    t.is(await deadIn("wh_churn"), 0, "its dead rows are gone");
    t.true((await counts("wh_churn")).analyzes > 0, "and it was analyzed: most of its rows changed");
    await until("wh_grown analyzed and wh_appended vacuumed", async () => {
      const appended = await counts("wh_appended");
      return (await counts("wh_grown")).analyzes > 0 && appended.vacuums > 0 && appended.analyzes > 0;
    });
    t.is(await vacuums("wh_grown"), 0, "too few rows inserted for a vacuum");
    t.true((await counts("wh_appended")).analyzes > 0, "analyzed with its vacuum");
    t.deepEqual(await counts("churn_other"), { vacuums: 0, analyzes: 0 }, "still left alone");
    t.deepEqual(await counts("wh_large"), { vacuums: 0, analyzes: 0 }, "still not due");

    await pool.query("ALTER TABLE wh_churn SET (autovacuum_enabled = true)");
    await pool.query("ALTER TABLE wh_large SET (autovacuum_enabled = true)");
    const serverOn = (await pool.query<{ on: boolean }>("SELECT current_setting('autovacuum') = 'on' AS on")).rows[0]?.on;
    if (serverOn) {
      await until("our tables handed back to autovacuum", () => heard.length > 1);
      t.deepEqual(heard.at(-1), [], "none is left to the service");
    } else {
      t.log("the server's autovacuum is off: every table of ours stays ours to vacuum");
    }
    t.deepEqual(errors, []);
    await vacuum.stop();
  });
}
