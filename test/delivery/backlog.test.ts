import test from "ava";
import pg from "pg";
import { adminAuth, createClient } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { anotherInstance, rest, serviceOn } from "../helpers/service.js";
import { notOnMongo, type StoreTarget, sharedTargets, storeTargets } from "../helpers/stores.js";

const SUBSCRIPTIONS = 5;
const EVENTS = 40;
const NOTIFICATIONS = SUBSCRIPTIONS * EVENTS;

async function subscribeAndPublish(baseUrl: string, receiver: Receiver): Promise<void> {
  const owner = await createClient(baseUrl, "Backlog");
  await rest(baseUrl, "POST", "/api/internal/eventTypes", { name: "Backlog.Tick", description: "a test event" }, adminAuth);
  for (let i = 0; i < SUBSCRIPTIONS; i++) {
    const created = await rest(
      baseUrl,
      "POST",
      "/api/webhookSubscription",
      { event: "Backlog.Tick", url: `${receiver.url}?s=${i}` },
      owner.auth,
    );
    if (created.status !== 200) throw new Error(created.text);
  }
  const published = await Promise.all(
    Array.from({ length: EVENTS }, (_, n) =>
      rest(baseUrl, "POST", "/api/internal/events/publish", { clientId: owner.id, event: "Backlog.Tick", payload: { n } }, adminAuth),
    ),
  );
  const refused = published.find((p) => p.status !== 200);
  if (refused) throw new Error(`a publish was refused: ${refused.status} ${refused.text}`);
}

for (const target of storeTargets()) {
  // With a poll a minute apart, only wake-ups move the jobs: a backlog many
  // times Agenda's lock limit drains as attempts finish, each once.
  test.serial(`${target.name}: a backlog far larger than the lock limit drains through wake-ups alone`, async (t) => {
    const receiver = await Receiver.start();
    t.teardown(() => receiver.close());
    const { baseUrl } = await serviceOn(t, target, { SCHEDULER_POLL_MS: "60000", DELIVERY_CONCURRENCY: "4" });
    await subscribeAndPublish(baseUrl, receiver);
    const received = await receiver.waitFor(NOTIFICATIONS, 30_000);
    const jobIds = new Set(received.map((r) => r.headers["x-jobid"]));
    t.is(jobIds.size, NOTIFICATIONS, "every notification once");
    t.true(received.every((r) => r.headers["x-jobattempt"] === "0"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.is(receiver.requests.length, NOTIFICATIONS, "and nothing twice");
  });
}

/** The jobs left in a stopped service's store, and how many of them are locked. */
async function jobsLeft(target: StoreTarget, url: string): Promise<{ locked: number; left: number }> {
  if (target.name === "mongodb") {
    const { MongoClient } = await import("mongodb");
    const client = new MongoClient(url);
    try {
      const notifications = client.db().collection("wh_notifications");
      const [left, locked] = await Promise.all([
        notifications.countDocuments({ job: { $exists: true } }),
        notifications.countDocuments({ job: { $exists: true }, "job.lockedAt": { $ne: null } }),
      ]);
      return { locked, left };
    } finally {
      await client.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ locked: number; left: number }>(
      "SELECT count(*) FILTER (WHERE locked_at IS NOT NULL)::int AS locked, count(*)::int AS left FROM wh_delivery_jobs",
    );
    return rows[0] ?? { locked: 0, left: 0 };
  } finally {
    await client.end();
  }
}

for (const target of sharedTargets(test, "stopping mid-backlog hands every job lock back")) {
  test.serial(`${target.name}: stopping mid-backlog hands every job lock back, also those locked ahead`, async (t) => {
    const receiver = await Receiver.start(() => ({ status: 200, delayMs: 200 }));
    t.teardown(() => receiver.close());
    const { service, baseUrl, storeEnv } = await serviceOn(t, target, { DELIVERY_CONCURRENCY: "4" });
    await subscribeAndPublish(baseUrl, receiver);
    await receiver.waitFor(8);
    await service.stop();
    const { locked, left } = await jobsLeft(target, storeEnv.DATABASE_URL as string);
    t.true(left > 0, "the stop came before the backlog was done");
    t.is(locked, 0);
  });
}

const postgres = storeTargets().find((target) => target.name === "postgres");
notOnMongo(test, "jobs published on one instance are taken up by another at once");
if (postgres) {
  // Scheduling on one instance wakes the others through the database: with
  // polls a minute apart, only that NOTIFY lets the second instance help.
  test.serial("postgres: jobs published on one instance are taken up by another at once", async (t) => {
    const receiver = await Receiver.start(() => ({ status: 200, delayMs: 1500 }));
    t.teardown(() => receiver.close());
    const slow = await serviceOn(t, postgres, { SCHEDULER_POLL_MS: "60000", DELIVERY_CONCURRENCY: "1" });
    // The helping instance: it takes up what the slow one publishes.
    await anotherInstance(t, slow, { SCHEDULER_POLL_MS: "60000", DELIVERY_CONCURRENCY: "16" });
    const owner = await createClient(slow.baseUrl, "Shared");
    await rest(slow.baseUrl, "POST", "/api/internal/eventTypes", { name: "Backlog.Tick", description: "a test event" }, adminAuth);
    for (let i = 0; i < 12; i++) {
      await rest(slow.baseUrl, "POST", "/api/webhookSubscription", { event: "Backlog.Tick", url: `${receiver.url}?s=${i}` }, owner.auth);
    }
    const started = Date.now();
    const published = await rest(
      slow.baseUrl,
      "POST",
      "/api/internal/events/publish",
      { clientId: owner.id, event: "Backlog.Tick", payload: {} },
      adminAuth,
    );
    t.is((published.json.jobIds as string[]).length, 12);
    // One instance alone, one at a time, would need 12 × 1.5 s.
    await receiver.waitFor(12, 8_000);
    t.true(Date.now() - started < 8_000);
    t.is(new Set(receiver.requests.map((r) => r.headers["x-jobid"])).size, 12);
  });
}
