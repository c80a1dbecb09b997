import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { TestFn } from "ava";
import pg from "pg";
import { createEmbeddedDatabase } from "../../src/store/postgres/embedded-database.js";
import type { SqlClient } from "../../src/store/postgres/sql-pool.js";

/**
 * The stores a test runs against: embedded PGlite always, PostgreSQL when
 * POSTGRES_URL is set, MongoDB when MONGODB_URL is set. Each target makes a
 * fresh, private database so test files run in parallel.
 */
export interface StoreTarget {
  name: "pglite" | "postgres" | "mongodb";
  /** Environment for the service (DATABASE_URL or DATA_DIR) and a cleanup. */
  create(): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }>;
}

/**
 * A new, empty embedded database, made once per PGlite version on this
 * machine and kept in the temporary directory: making one runs initdb in
 * WebAssembly, about 9 s of CPU, which most tests would otherwise spend
 * each. test/store/embedded-database.test.ts covers making one.
 */
let template: Promise<string> | undefined;
function embeddedTemplate(): Promise<string> {
  template ??= (async () => {
    const require = createRequire(import.meta.url);
    const manifest = join(dirname(require.resolve("@electric-sql/pglite")), "..", "package.json");
    const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
    const shared = join(tmpdir(), `wh-test-pglite-${version}`);
    if (existsSync(join(shared, "PG_VERSION"))) return shared;
    // Made under a name of this process's own, then moved into place whole: a test file
    // starting meanwhile makes its own, and the first to finish is kept.
    const own = `${shared}.${process.pid}`;
    await rm(own, { recursive: true, force: true });
    await createEmbeddedDatabase(own);
    await rename(own, shared).catch(async (error: NodeJS.ErrnoException) => {
      await rm(own, { recursive: true, force: true });
      if (!existsSync(join(shared, "PG_VERSION"))) throw error;
    });
    return shared;
  })();
  return template;
}

/** A new data directory (DATA_DIR) holding a new, empty embedded database. */
export async function embeddedDataDir(prefix = "wh-test-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  // cp(1): Node's fs.cp takes seconds over the database's thousand small files.
  await promisify(execFile)("cp", ["-R", await embeddedTemplate(), join(dir, "pglite")]);
  return dir;
}

const pgliteTarget: StoreTarget = {
  name: "pglite",
  async create() {
    const dir = await embeddedDataDir();
    return { env: { DATA_DIR: dir }, cleanup: () => rm(dir, { recursive: true, force: true }) };
  },
};

function postgresTarget(adminUrl: string): StoreTarget {
  return {
    name: "postgres",
    async create() {
      const name = `wh_test_${randomBytes(6).toString("hex")}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return {
        env: { DATABASE_URL: url.toString() },
        async cleanup() {
          const client = new pg.Client({ connectionString: adminUrl });
          await client.connect();
          await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          await client.end();
        },
      };
    },
  };
}

function mongoTarget(baseUrl: string): StoreTarget {
  return {
    name: "mongodb",
    async create() {
      const url = new URL(baseUrl);
      url.pathname = `/wh_test_${randomBytes(6).toString("hex")}`;
      return {
        env: { DATABASE_URL: url.toString() },
        async cleanup() {
          const { MongoClient } = await import("mongodb");
          const client = new MongoClient(url.toString());
          await client.db().dropDatabase();
          await client.close();
        },
      };
    },
  };
}

/**
 * How a test on this target registers: PGlite works on the test's own thread
 * and can hold it for seconds, long enough for a PostgreSQL connection opened
 * meanwhile to time out, so its tests take turns.
 */
export function testOn<T extends { serial: unknown }>(test: T, target: StoreTarget): T | T["serial"] {
  return target.name === "pglite" ? test.serial : test;
}

let announced = false;

export function storeTargets(): StoreTarget[] {
  const targets = [pgliteTarget];
  const postgresUrl = process.env.POSTGRES_URL;
  const mongoUrl = process.env.MONGODB_URL;
  if (postgresUrl) targets.push(postgresTarget(postgresUrl));
  if (mongoUrl) targets.push(mongoTarget(mongoUrl));
  if (!announced) {
    announced = true;
    if (!postgresUrl) console.warn("!!! POSTGRES_URL is not set: PostgreSQL store runs SKIPPED (PGlite only)");
    if (!mongoUrl) console.warn("!!! MONGODB_URL is not set: MongoDB store runs SKIPPED");
  }
  return targets;
}

/**
 * The tests that run on PostgreSQL but not on MongoDB, each with why: the one
 * place that names them. Each registers as a skipped "mongodb: …" test
 * (notOnMongo), so a run lists them and tools/mongo-emulator/run.ts counts
 * them. Tests of PostgreSQL's own mechanisms (its pool, transactions on a
 * connection, LISTEN/NOTIFY, a connection lost mid-transaction) have no
 * MongoDB counterpart and are not listed.
 */
export const NOT_ON_MONGODB = {
  "jobs published on one instance are taken up by another at once":
    "on MongoDB that wake-up is a change stream (MONGODB_CHANGE_STREAMS=true, a replica set), which the emulator lacks",
  "a watcher on instance B sees what happens on instance A":
    "on MongoDB the live feed crosses instances through a change stream (MONGODB_CHANGE_STREAMS=true), which the emulator lacks",
  "the store's connections killed and refused under the scheduler":
    "kills and refuses the database's connections from the server's side (pg_terminate_backend, ALLOW_CONNECTIONS); the emulator has no such control",
  "Agenda's repository with a renewal in flight":
    "slows each SQL statement by a network's round trip to keep the renewal in flight; the races it checks are in AgendaJobs, the same over every store",
  "a notification an older version accepted but never queued is delivered at the next start":
    "writes that older version's SQL rows; on MongoDB, test/store/job-store.test.ts's test of prepare covers what an older version left",
  "a database made by the previous release opens, migrated in place, nothing lost":
    "the fixture is a PostgreSQL dump; MongoDB has no schema to migrate (its indexes are made at start)",
} as const;

/** Registers `title` as skipped on MongoDB with its reason from NOT_ON_MONGODB, when MongoDB runs. */
export function notOnMongo(test: TestFn, title: keyof typeof NOT_ON_MONGODB): void {
  if (process.env.MONGODB_URL) test.skip(`mongodb: ${title}: ${NOT_ON_MONGODB[title]}`, () => {});
}

/**
 * The targets that several instances can share (PostgreSQL and MongoDB, not
 * the embedded store): a skipped test, named for `what`, says which is missing.
 */
export function sharedTargets(test: TestFn, what: string): StoreTarget[] {
  const targets = storeTargets().filter((target) => target.name !== "pglite");
  if (!process.env.POSTGRES_URL) test.skip(`postgres: ${what}: set POSTGRES_URL`, () => {});
  if (!process.env.MONGODB_URL) test.skip(`mongodb: ${what}: set MONGODB_URL`, () => {});
  return targets;
}

/**
 * The PostgreSQL target, or undefined without POSTGRES_URL: then a skipped
 * test, named for `what` runs only against PostgreSQL, says so.
 */
export function postgresOnly(test: TestFn, what: string): StoreTarget | undefined {
  const postgres = storeTargets().find((target) => target.name === "postgres");
  if (!postgres) test.skip(`${what}: needs PostgreSQL (set POSTGRES_URL)`, () => {});
  return postgres;
}

/** The plan a prepared statement runs with, as EXPLAIN EXECUTE prints it, one line per node. */
export async function planOf(client: Pick<SqlClient, "query">, execute: string): Promise<string> {
  const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${execute}`);
  return rows.map((row) => row["QUERY PLAN"]).join("\n");
}
