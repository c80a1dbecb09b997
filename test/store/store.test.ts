import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import pg from "pg";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { type OpenStore, openStore, PLAN_EACH_TIME, withSettings } from "../../src/store/open-store.js";
import { startEmbeddedPostgres } from "../../src/store/postgres/embedded-pglite.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";
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
    return opened.store;
  })();
  // Keep an early failure from becoming an unhandled rejection before a test awaits it.
  ready.catch(() => {});
  test.after.always(async () => {
    await opened?.close();
    await cleanup?.();
  });
  storeContract(test, target.name, () => ready);
}

// A store that can't run here is reported as skipped, by the variable that enables it.
if (!process.env.POSTGRES_URL) test.skip("postgres: set POSTGRES_URL to run the store contract against PostgreSQL", () => {});
if (!process.env.MONGODB_URL) test.skip("mongodb: set MONGODB_URL to run the store contract against MongoDB", () => {});

// Each run of a prepared statement is planned for its values (see PLAN_EACH_TIME in open-store.ts).
test("pglite: the embedded database plans each run of a prepared statement for its values", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "wh-plan-"));
  const embedded = await startEmbeddedPostgres(dir, 1, [PLAN_EACH_TIME]);
  const pool = new pg.Pool({ connectionString: embedded.connectionString, max: 1 });
  try {
    t.is((await pool.query("SHOW plan_cache_mode")).rows[0]?.plan_cache_mode, "force_custom_plan");
  } finally {
    await pool.end();
    await embedded.close();
    await rm(dir, { recursive: true, force: true });
  }
});

// The deliveries' pool commits without waiting for the disk, and every pool plans each run; a URL's own startup options still apply.
if (process.env.POSTGRES_URL) {
  const adminUrl = process.env.POSTGRES_URL;
  test("postgres: the connection settings join the URL's own options", async (t) => {
    const url = new URL(adminUrl);
    url.searchParams.set("options", "-c statement_timeout=12345");
    const pool = new pg.Pool({ ...withSettings(url.toString(), [PLAN_EACH_TIME, "synchronous_commit=off"]), max: 1 });
    try {
      t.is((await pool.query("SHOW synchronous_commit")).rows[0]?.synchronous_commit, "off");
      t.is((await pool.query("SHOW plan_cache_mode")).rows[0]?.plan_cache_mode, "force_custom_plan");
      t.is((await pool.query("SHOW statement_timeout")).rows[0]?.statement_timeout, "12345ms");
    } finally {
      await pool.end();
    }
  });
}
