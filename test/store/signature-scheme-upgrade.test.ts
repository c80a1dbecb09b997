import test from "ava";
import pg from "pg";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { openStore } from "../../src/store/open-store.js";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { MIGRATIONS, migrate } from "../../src/store/postgres/schema.js";
import type { SqlPool } from "../../src/store/postgres/sql-pool.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { type StoreTarget, storeTargets } from "../helpers/stores.js";

// A database written before subscriptions had a signing scheme opens with each of them signing as before.

const log = pino({ level: "silent" });
const at = new Date(Date.UTC(2026, 0, 1));
const old = {
  id: "sub_0123456789abcdef0123456789abcdef",
  clientId: "cli_0123456789abcdef0123456789abcdef",
  event: "Order.Created",
  url: "https://example.com/hook",
  description: "from before schemes",
  enabled: true,
  publicKeyPem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
  privateKeyPem: "sealed:v1:AAAA",
  createdAt: at,
  updatedAt: at,
};

/** The schema as it was before the signature_scheme column, with one client and one subscription in it. */
async function writeOldSqlDatabase(pool: SqlPool): Promise<void> {
  const before = MIGRATIONS.findIndex((migration) => migration.includes("signature_scheme"));
  await migrate(pool, MIGRATIONS.slice(0, before));
  await pool.query("INSERT INTO wh_clients (id, name, created_at) VALUES ($1, 'old', $2)", [old.clientId, at]);
  await pool.query(
    `INSERT INTO wh_subscriptions (id, client_id, event, url, description, enabled, public_key_pem, private_key_pem, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [old.id, old.clientId, old.event, old.url, old.description, old.enabled, old.publicKeyPem, old.privateKeyPem, at, at],
  );
}

async function writeOldDatabase(target: StoreTarget["name"], env: Record<string, string>): Promise<void> {
  if (target === "pglite") {
    const pool = await EmbeddedPool.open(env.DATA_DIR as string, [], () => {});
    await writeOldSqlDatabase(pool).finally(() => pool.end());
  } else if (target === "postgres") {
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
    await writeOldSqlDatabase(pool).finally(() => pool.end());
  } else {
    const { MongoClient } = await import("mongodb");
    const client = new MongoClient(env.DATABASE_URL as string);
    try {
      const { id, ...fields } = old;
      await client
        .db()
        .collection("wh_clients")
        .insertOne({ _id: old.clientId as never, name: "old", createdAt: at });
      await client
        .db()
        .collection("wh_subscriptions")
        .insertOne({ _id: id as never, ...fields });
    } finally {
      await client.close();
    }
  }
}

for (const target of storeTargets()) {
  test(`${target.name}: a subscription stored before signing schemes reads as RSA_SHA256`, async (t) => {
    const { env, cleanup } = await target.create();
    t.teardown(cleanup);
    await writeOldDatabase(target.name, env);
    const opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...env }).store, log);
    t.teardown(() => opened.close());
    t.deepEqual(await opened.store.subscriptions.get(old.id), { ...old, signatureScheme: "RSA_SHA256" });
  });
}

if (!process.env.POSTGRES_URL) test.skip("postgres: set POSTGRES_URL to run the upgrade against PostgreSQL", () => {});
if (!process.env.MONGODB_URL) test.skip("mongodb: set MONGODB_URL to run the upgrade against MongoDB", () => {});
