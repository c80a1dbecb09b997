import { readFileSync } from "node:fs";
import { join } from "node:path";
import test from "ava";
import pg from "pg";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { adminAuth } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, startTestService } from "../helpers/service.js";
import { notOnMongo, type StoreTarget, storeTargets, testOn } from "../helpers/stores.js";

/**
 * A database written by the previous release through its API
 * (test/fixtures/upgrade, made by tools/upgrade-fixtures.ts), opened by this
 * one: migrated forward in place, with nothing lost. Checked through the API
 * only, so that every migration appended later must pass it too.
 */
const fixture = join(import.meta.dirname, "..", "fixtures", "upgrade");
const dump = readFileSync(join(fixture, "database.sql"), "utf8");
const manifest = JSON.parse(readFileSync(join(fixture, "manifest.json"), "utf8")) as {
  apiKey: string;
  clientId: string;
  /** Where the pending notification goes: a test receiver listens there. */
  pendingReceiverPort: number;
  subscriptions: { delivered: string; failed: string; pending: string };
  notifications: Array<{ id: string; subscriptionId: string; status: string; attemptCount?: number }>;
  idempotent: { key: string; event: string; jobIds: string[] };
};

/** A notification of the fixture's that is done: its attempts are recorded. */
type Recorded = (typeof manifest.notifications)[number] & { attemptCount: number };

const TITLE = "a database made by the previous release opens, migrated in place, nothing lost";
notOnMongo(test, TITLE);

/** Loads the fixture's SQL into the new, empty database the service will open. */
async function load(target: StoreTarget, env: Record<string, string>): Promise<void> {
  if (target.name === "postgres") {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      await client.query(dump);
    } finally {
      await client.end();
    }
    return;
  }
  const pool = await EmbeddedPool.open(env.DATA_DIR as string, [], (error) => {
    throw error;
  });
  try {
    await pool.query(dump);
  } finally {
    await pool.end();
  }
}

for (const target of storeTargets().filter((each) => each.name !== "mongodb")) {
  testOn(test, target)(`${target.name}: ${TITLE}`, async (t) => {
    t.timeout(120_000);
    const store = await target.create();
    t.teardown(() => store.cleanup());
    await load(target, store.env);
    const receiver = await Receiver.start();
    // The pending notification's receiver, there before the service starts: its first attempt is due at once.
    const pendingReceiver = await Receiver.start(undefined, manifest.pendingReceiverPort);
    // The fixture's notifications are as old as the fixture: a retention shorter than that would purge them.
    const { service, baseUrl } = await startTestService({ ...store.env, RETENTION: "36500d" });
    t.teardown(async () => {
      await service.stop();
      await receiver.close();
      await pendingReceiver.close();
    });
    const auth = { authorization: `Bearer ${manifest.apiKey}` };

    const listed = await rest(baseUrl, "GET", "/api/webhookSubscription", undefined, auth);
    t.is(listed.status, 200, listed.text);
    const ids = (listed.json.subscriptions as Array<{ id: string }>).map((each) => each.id).sort();
    t.deepEqual(ids, Object.values(manifest.subscriptions).sort());
    const clients = await rest(baseUrl, "GET", "/api/internal/clients", undefined, adminAuth);
    t.true(
      (clients.json.clients as Array<{ id: string }>).some((each) => each.id === manifest.clientId),
      clients.text,
    );

    for (const expected of manifest.notifications.filter((each): each is Recorded => each.attemptCount !== undefined)) {
      const got = await rest(
        baseUrl,
        "GET",
        `/api/webhookSubscription/${expected.subscriptionId}/notifications/${expected.id}`,
        undefined,
        auth,
      );
      t.is(got.status, 200, got.text);
      t.is(got.json.status, expected.status, expected.id);
      t.is(got.json.attemptCount, expected.attemptCount, expected.id);
      t.is((got.json.attempts as unknown[]).length, expected.attemptCount, `${expected.id}: every attempt kept`);
    }

    const pending = manifest.notifications.find((each) => each.status === "NOTIFICATION_STATUS_PENDING");
    if (!pending) return t.fail("the fixture holds no pending notification");
    const arrived = await pendingReceiver.waitForJob(pending.id, 60_000);
    t.is(JSON.parse(arrived.body).OrderId, "ord_4");

    // Its idempotency key still answers what it answered then; a new publish is accepted and delivered.
    const publish = (body: Record<string, unknown>) =>
      rest(baseUrl, "POST", "/api/internal/events/publish", { clientId: manifest.clientId, ...body }, adminAuth);
    const repeated = await publish({
      event: manifest.idempotent.event,
      payload: { OrderId: "ord_1" },
      idempotencyKey: manifest.idempotent.key,
    });
    t.is(repeated.status, 200, repeated.text);
    t.true(repeated.json.duplicate);
    t.deepEqual(repeated.json.jobIds, manifest.idempotent.jobIds);
    const moved = await rest(baseUrl, "PATCH", `/api/webhookSubscription/${manifest.subscriptions.delivered}`, { url: receiver.url }, auth);
    t.is(moved.status, 200, moved.text);
    const fresh = await publish({ event: "Order.Shipped", payload: { OrderId: "ord_5" } });
    t.is(fresh.status, 200, fresh.text);
    await receiver.waitForJob((fresh.json.jobIds as string[])[0] as string, 30_000);
  });
}
