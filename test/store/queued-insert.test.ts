import test, { type ExecutionContext } from "ava";
import pg from "pg";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { newId } from "../../src/domain/ids.js";
import type { Notification } from "../../src/domain/model.js";
import { openStore, STABLE_PLANS, withSettings } from "../../src/store/open-store.js";
import { LOCK_NEXT_JOBS } from "../../src/store/postgres/agenda-jobs.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { planOf, type StoreTarget, storeTargets } from "../helpers/stores.js";

const log = pino({ level: "silent" });
const at = new Date(Date.UTC(2026, 0, 1));

function notification(subscriptionId: string): Notification {
  const body = '{"Event":"Order.Created","Timestamp":"2026-01-01T00:00:00.000Z"}';
  return {
    id: newId("ntf"),
    subscriptionId,
    clientId: "cli_x",
    event: "Order.Created",
    body,
    status: "pending",
    attemptCount: 0,
    createdAt: at,
    updatedAt: at,
  };
}

/** A fresh store of `target` with Agenda's table created, closed and dropped after the test. */
async function openQueuingStore(t: ExecutionContext, target: StoreTarget) {
  const created = await target.create();
  const opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...created.env }).store, log);
  t.teardown(async () => {
    await opened.close();
    await created.cleanup();
  });
  await opened.agendaBackend.connect(); // creates Agenda's table
  return { opened, insertQueued: opened.insertQueued, databaseUrl: created.env.DATABASE_URL };
}

// Where a store holds Agenda's jobs too (PostgreSQL, PGlite), accepting stores and queues in one statement.
for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  test(`${target.name}: notifications accepted together are stored scheduled with one job each; a refused call writes nothing of its own`, async (t) => {
    const { opened, insertQueued } = await openQueuingStore(t, target);
    if (!insertQueued) return t.fail("a PostgreSQL store offers insertQueued");

    const first = [notification("sub_a"), notification("sub_a")];
    const second = [notification("sub_b"), notification("sub_b"), notification("sub_b")];
    await insertQueued(first, "deliver-notification", "test");
    // Reuses an id that exists: refused as a whole, alone in its batch. (Not on PGlite: its
    // socket server drops the connection after any SQL error, failing the batch's other calls too.)
    const clashing = [notification("sub_c"), first[0] as Notification];
    if (target.name === "postgres") {
      const results = await Promise.allSettled([
        insertQueued(second, "deliver-notification", "test"),
        insertQueued(clashing, "deliver-notification", "test"),
      ]);
      t.is(results[0].status, "fulfilled", String((results[0] as PromiseRejectedResult).reason));
      t.is(results[1].status, "rejected");
    } else {
      await insertQueued(second, "deliver-notification", "test");
    }

    const accepted = [...first, ...second];
    for (const n of accepted) t.is((await opened.store.notifications.get(n.id))?.status, "pending");
    t.is(await opened.store.notifications.get((clashing[0] as Notification).id), undefined);
    t.deepEqual(await opened.store.notifications.listUnscheduled(new Date(Date.now() + 60_000), 100), []);
    const jobs = await opened.agendaBackend.repository.queryJobs({ name: "deliver-notification" });
    t.deepEqual(jobs.jobs.map((job) => (job.data as { notificationId: string }).notificationId).sort(), accepted.map((n) => n.id).sort());
  });
}

// The scheduler asks for some jobs locked at insert (while it keeps up), and runs them without locking them again.
for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  test(`${target.name}: the first jobs of an insert can be locked for the caller, and are answered as Agenda would read them`, async (t) => {
    const { opened, insertQueued } = await openQueuingStore(t, target);
    if (!insertQueued) return t.fail("a PostgreSQL store offers insertQueued");

    const before = Date.now();
    const [a, b] = await Promise.all([
      insertQueued([notification("sub_a"), notification("sub_a")], "deliver-notification", "instance-1", () => 3),
      insertQueued([notification("sub_b"), notification("sub_b")], "deliver-notification", "instance-1", () => 0),
    ]);
    const unlocked = await insertQueued([notification("sub_c")], "deliver-notification", "instance-1");
    // One statement for both calls: the first three of its jobs are locked, whichever call they belong to.
    t.is(a?.locked.length, 2);
    t.is(b?.locked.length, 1);
    t.deepEqual(unlocked.locked, []);
    t.truthy(unlocked.jobId);

    const { jobs } = await opened.agendaBackend.repository.queryJobs({ name: "deliver-notification" });
    t.is(jobs.length, 5);
    for (const answered of [...(a?.locked ?? []), ...(b?.locked ?? [])]) {
      const stored = jobs.find((job) => String(job._id) === String(answered._id));
      t.truthy(stored, "the answered job is in the table");
      t.is(stored?.lockedAt?.getTime(), answered.lockedAt?.getTime());
      t.true((answered.lockedAt?.getTime() ?? 0) >= before);
      t.is(stored?.lastModifiedBy, "instance-1");
      t.is(stored?.nextRunAt?.getTime(), answered.nextRunAt?.getTime());
      t.deepEqual(stored?.data, answered.data);
      t.like(answered, { name: "deliver-notification", priority: 0, type: "normal", disabled: false });
    }
    t.is(jobs.filter((job) => job.lockedAt).length, 3, "the rest wait unlocked for any instance");
  });
}

// The lock statement, prepared while the table is empty as on a new database, keeps to its indexes
// once 20 000 jobs wait: the expired-lock lookup must not walk every waiting job.
for (const target of storeTargets().filter((t) => t.name === "postgres")) {
  test(`${target.name}: the lock statement's one plan stays on its indexes as the backlog grows`, async (t) => {
    const { databaseUrl } = await openQueuingStore(t, target);
    if (!databaseUrl) return t.fail("a PostgreSQL target has a DATABASE_URL");
    // A connection set up as the store's pools are.
    const client = new pg.Client(withSettings(databaseUrl, STABLE_PLANS));
    await client.connect();
    t.teardown(() => client.end());
    await client.query(`PREPARE lock_probe AS ${LOCK_NEXT_JOBS}`);
    const args = "('deliver-notification', now(), now() - interval '1 minute', 'test', 256, now())";
    await client.query(`EXECUTE lock_probe${args}`);
    await client.query(
      `INSERT INTO agenda_jobs (name, next_run_at, data) SELECT 'deliver-notification', now() - interval '1 hour' + g * interval '1 ms', '{}'
       FROM generate_series(1, 20000) AS g`,
    );
    const plan = await planOf(client, `EXECUTE lock_probe${args}`);
    t.regex(plan, /agenda_jobs_locked_at_idx/, plan);
    t.notRegex(plan, /Seq Scan/, plan);
  });
}
