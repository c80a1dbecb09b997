import { rm } from "node:fs/promises";
import test, { type ExecutionContext } from "ava";
import pg from "pg";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { openJobs } from "../../src/store/open-jobs.js";
import { type OpenStore, openStore, STABLE_PLANS, withSettings } from "../../src/store/open-store.js";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import type { SqlPool } from "../../src/store/postgres/sql-pool.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { embeddedDataDir, planOf, storeTargets } from "../helpers/stores.js";
import { lifecycleContract } from "./lifecycle-contract.js";
import { limitsContract } from "./limits-contract.js";
import { relayLeaseContract } from "./relay-lease-contract.js";
import { statsContract } from "./stats-contract.js";
import { storeContract } from "./store-contract.js";

const log = pino({ level: "silent" });

// One store per target, opened once and shared by that target's tests.
for (const target of storeTargets()) {
  let opened: OpenStore | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  const ready = (async () => {
    const created = await target.create();
    cleanup = created.cleanup;
    opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...created.env }).store, log);
    const { jobs } = openJobs(opened.database, { owner: "contract", lockLifetimeMs: 30_000 });
    await jobs.prepare();
    return { ...opened.store, jobs };
  })();
  // Keep an early failure from becoming an unhandled rejection before a test awaits it.
  ready.catch(() => {});
  test.after.always(async () => {
    await opened?.close();
    await cleanup?.();
  });
  storeContract(test, target.name, () => ready);
  limitsContract(test, target.name, () => ready);
  relayLeaseContract(test, target.name, () => ready);
  lifecycleContract(test, target.name, () => ready);
  statsContract(test, target.name, () => ready);
}

// A store that can't run here is reported as skipped, by the variable that enables it.
if (!process.env.POSTGRES_URL) test.skip("postgres: set POSTGRES_URL to run the store contract against PostgreSQL", () => {});
if (!process.env.MONGODB_URL) test.skip("mongodb: set MONGODB_URL to run the store contract against MongoDB", () => {});

/**
 * A statement prepared while its table is empty, as ours are on a new
 * database, still finds rows through the index once the table has grown:
 * its one plan (see STABLE_PLANS in open-store.ts) is not a sequential scan.
 */
async function assertPlanStaysOnIndex(t: ExecutionContext, pool: SqlPool): Promise<void> {
  const client = await pool.connect();
  try {
    t.is((await client.query("SHOW plan_cache_mode")).rows[0]?.plan_cache_mode, "force_generic_plan");
    await client.query("CREATE TEMP TABLE plan_probe (id text PRIMARY KEY, body text NOT NULL)");
    // The shape of the attempt record: rows to update joined to an array of ids.
    await client.query(
      "PREPARE plan_probe_update (text[], text[]) AS UPDATE plan_probe p SET body = t.body FROM unnest($1::text[], $2::text[]) AS t (id, body) WHERE p.id = t.id",
    );
    await client.query("EXECUTE plan_probe_update('{n1}', '{y}')");
    await client.query("INSERT INTO plan_probe SELECT 'n' || g, repeat('x', 200) FROM generate_series(1, 20000) AS g");
    const plan = await planOf(client, "EXECUTE plan_probe_update('{n1,n2}', '{y,z}')");
    t.regex(plan, /Index/, plan);
    t.notRegex(plan, /Seq Scan/, plan);
  } finally {
    client.release();
  }
}

test("pglite: a statement prepared on an empty table keeps using the index as the table grows", async (t) => {
  const dir = await embeddedDataDir("wh-plan-");
  const pool = await EmbeddedPool.open(dir, STABLE_PLANS, () => {});
  try {
    await assertPlanStaysOnIndex(t, pool);
  } finally {
    await pool.end();
    await rm(dir, { recursive: true, force: true });
  }
});

// The deliveries' pool commits without waiting for the disk, and every pool keeps stable plans; a URL's own startup options still apply.
if (process.env.POSTGRES_URL) {
  const adminUrl = process.env.POSTGRES_URL;
  test("postgres: the connection settings join the URL's own options", async (t) => {
    const url = new URL(adminUrl);
    url.searchParams.set("options", "-c statement_timeout=12345");
    const pool = new pg.Pool({ ...withSettings(url.toString(), [...STABLE_PLANS, "synchronous_commit=off"]), max: 1 });
    try {
      t.is((await pool.query("SHOW synchronous_commit")).rows[0]?.synchronous_commit, "off");
      t.is((await pool.query("SHOW statement_timeout")).rows[0]?.statement_timeout, "12345ms");
      await assertPlanStaysOnIndex(t, pool);
    } finally {
      await pool.end();
    }
  });
}
