/**
 * Makes the upgrade fixture that test/store/upgrade.test.ts opens with the
 * current code: a database written by this version through its API, dumped
 * as plain SQL, plus a manifest of what the API must answer about it. Run it
 * when a release is cut (docs/operations.md, Upgrades):
 *
 *   POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx tools/upgrade-fixtures.ts
 *
 * It needs a PostgreSQL server and its pg_dump on the PATH (the same major
 * version). The one dump serves both stores: the embedded one runs the same
 * migrations, and loads it into a new PGlite database.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { adminAuth, createClient } from "../test/helpers/admin.js";
import { eventually } from "../test/helpers/eventually.js";
import { Receiver } from "../test/helpers/receiver.js";
import { rest, startTestService } from "../test/helpers/service.js";

const FIXTURE_DIR = join(import.meta.dirname, "..", "test", "fixtures", "upgrade");

const adminUrl = process.env.POSTGRES_URL;
if (!adminUrl) throw new Error("set POSTGRES_URL to a PostgreSQL server the fixture can be made on");

const name = `wh_upgrade_fixture_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const delivering = await Receiver.start(() => ({ status: 200, body: "ok" }));
const failing = await Receiver.start(() => ({ status: 500, body: "no" }));
// Holds its answer past the service's stop: that attempt is interrupted, and its notification stays pending.
// On a fixed port, below Linux's ephemeral range, where the test listens before the service starts.
const PENDING_PORT = 29417;
const hanging = await Receiver.start(() => ({ status: 200, delayMs: 60_000 }), PENDING_PORT);
try {
  const { service, baseUrl } = await startTestService({
    DATABASE_URL: url.toString(),
    RETRY_SCHEDULE: "100ms,100ms",
    DELIVERY_TIMEOUT_MS: "30000",
    SHUTDOWN_GRACE_MS: "200",
  });
  const owner = await createClient(baseUrl, "Upgrade fixture");
  const subscribe = async (event: string, target: string, extra: Record<string, unknown> = {}) => {
    const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event, url: target, ...extra }, owner.auth);
    if (created.status !== 200) throw new Error(`subscribe: ${created.text}`);
    return created.json.id as string;
  };
  const subscriptions = {
    delivered: await subscribe("Order.Shipped", delivering.url, { description: "delivered" }),
    failed: await subscribe("Order.Created", failing.url, { description: "failed" }),
    pending: await subscribe("Order.Cancelled", hanging.url, { description: "pending" }),
  };
  const publish = async (event: string, payload: Record<string, unknown>, idempotencyKey?: string) => {
    const published = await rest(
      baseUrl,
      "POST",
      "/api/internal/events/publish",
      { clientId: owner.id, event, payload, ...(idempotencyKey ? { idempotencyKey } : {}) },
      adminAuth,
    );
    if (published.status !== 200) throw new Error(`publish: ${published.text}`);
    return (published.json.jobIds as string[])[0] as string;
  };
  const notification = async (subscription: string, id: string) =>
    (await rest(baseUrl, "GET", `/api/webhookSubscription/${subscription}/notifications/${id}`, undefined, owner.auth)).json;
  const statusOf = async (subscription: string, id: string) => (await notification(subscription, id)).status;

  const idempotencyKey = "upgrade-fixture-order-1";
  const delivered = [
    await publish("Order.Shipped", { OrderId: "ord_1", Carrier: "UPS" }, idempotencyKey),
    await publish("Order.Shipped", { OrderId: "ord_2", Carrier: "DHL" }),
  ];
  const failed = await publish("Order.Created", { OrderId: "ord_3", CustomerId: "cus_3", TotalAmount: 12.5, Currency: "EUR" });
  for (const id of delivered)
    await eventually(`${id} delivered`, async () => (await statusOf(subscriptions.delivered, id)) === "NOTIFICATION_STATUS_DELIVERED", {
      timeoutMs: 20_000,
    });
  await eventually(`${failed} failed`, async () => (await statusOf(subscriptions.failed, failed)) === "NOTIFICATION_STATUS_FAILED", {
    timeoutMs: 20_000,
  });
  const pending = await publish("Order.Cancelled", { OrderId: "ord_4" });
  await hanging.waitForJob(pending);
  const expected = [
    ...(await Promise.all(delivered.map((id) => notification(subscriptions.delivered, id)))),
    await notification(subscriptions.failed, failed),
  ].map((each) => ({ id: each.id, subscriptionId: each.subscriptionId, status: each.status, attemptCount: each.attemptCount }));
  await service.stop();

  const { stdout } = await promisify(execFile)("pg_dump", ["--inserts", "--no-owner", "--no-privileges", url.toString()], {
    maxBuffer: 64 * 1024 * 1024,
  });
  // psql's meta-commands (\restrict …) are not SQL: the test runs the dump through a driver.
  const dump = stdout
    .split("\n")
    .filter((line) => !line.startsWith("\\"))
    .join("\n");
  await mkdir(FIXTURE_DIR, { recursive: true });
  await writeFile(join(FIXTURE_DIR, "database.sql"), dump);
  const manifest = {
    apiKey: owner.key,
    clientId: owner.id,
    pendingReceiverPort: PENDING_PORT,
    subscriptions,
    notifications: [...expected, { id: pending, subscriptionId: subscriptions.pending, status: "NOTIFICATION_STATUS_PENDING" }],
    idempotent: { key: idempotencyKey, event: "Order.Shipped", jobIds: [delivered[0]] },
  };
  await writeFile(join(FIXTURE_DIR, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`wrote ${FIXTURE_DIR}/database.sql and manifest.json`);
} finally {
  await Promise.all([delivering.close(), failing.close(), hanging.close()]);
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
