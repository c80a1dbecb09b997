import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
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

const pgliteTarget: StoreTarget = {
  name: "pglite",
  async create() {
    const dir = await mkdtemp(join(tmpdir(), "wh-test-"));
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

/** The plan a prepared statement runs with, as EXPLAIN EXECUTE prints it, one line per node. */
export async function planOf(client: Pick<SqlClient, "query">, execute: string): Promise<string> {
  const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${execute}`);
  return rows.map((row) => row["QUERY PLAN"]).join("\n");
}
