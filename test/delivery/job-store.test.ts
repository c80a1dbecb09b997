import test, { type ExecutionContext } from "ava";
import pg from "pg";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { createJobStore } from "../../src/delivery/agenda/create-delivery-engine.js";
import type { LockedJob, NewDelivery } from "../../src/delivery/agenda/delivery-job-store.js";
import {
  COUNT_JOBS,
  FINISH,
  INSERT_CHECKED,
  LOCK_DUE,
  PostgresJobStore,
  REMOVE,
  RENEW,
  RETRY,
  SAVE,
  UNLOCK,
} from "../../src/delivery/agenda/postgres-job-store.js";
import type { LockRequest } from "../../src/delivery/job-source.js";
import { FanOutChangedError } from "../../src/domain/errors.js";
import { newId } from "../../src/domain/ids.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import { type OpenStore, openStore, STABLE_PLANS, withSettings } from "../../src/store/open-store.js";
import { READ_FOR_DELIVERY } from "../../src/store/postgres/notifications.js";
import { SUBSCRIPTIONS_FOR_EVENTS } from "../../src/store/postgres/subscriptions.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { planOf, type StoreTarget, storeTargets, testOn } from "../helpers/stores.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

/**
 * The delivery job store's contract, run against every database: what the
 * engine's feed and Agenda's repository rely on.
 */
const log = pino({ level: "silent" });

async function openJobs(t: ExecutionContext, target: StoreTarget, owner = "instance-1", lockLifetimeMs = 30_000) {
  const created = await target.create();
  const opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...created.env }).store, log);
  t.teardown(async () => {
    await opened.close();
    await created.cleanup();
  });
  const jobs = createJobStore(opened.database, { owner, lockLifetimeMs });
  await jobs.prepare();
  const client = await opened.store.clients.ensureWithKey("jobs", newId("cli"));
  return { opened, jobs, clientId: client.id, databaseUrl: created.env.DATABASE_URL };
}

async function subscribe(opened: OpenStore, clientId: string, url = "https://receiver.example/hook"): Promise<Subscription> {
  const subscription = subscriptionRecord(clientId, { url });
  await opened.store.subscriptions.insert(subscription);
  return subscription;
}

function deliveries(
  subscription: Subscription,
  count: number,
  endpoint = `${subscription.clientId} https://receiver.example`,
): NewDelivery[] {
  const at = new Date();
  return Array.from({ length: count }, (): NewDelivery => {
    const notification: Notification = {
      id: newId("ntf"),
      subscriptionId: subscription.id,
      clientId: subscription.clientId,
      event: "Order.Created",
      body: "{}",
      status: "pending",
      attemptCount: 0,
      createdAt: at,
      updatedAt: at,
    };
    return { notification, endpoint };
  });
}

const unlocked = (all: readonly NewDelivery[]) => all.map(() => false);

function request(limit: number, overrides: Partial<LockRequest> = {}): LockRequest {
  return { limit, endpointBudgets: new Map(), clientBudgets: new Map(), defaultPerEndpoint: 1000, defaultPerClient: 1000, ...overrides };
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: accepting stores each notification with a due job; those asked for go in locked and come back`,
    async (t) => {
      const { opened, jobs, clientId } = await openJobs(t, target);
      const subscription = await subscribe(opened, clientId);
      const first = deliveries(subscription, 3);
      const second = deliveries(subscription, 2);
      const before = Date.now();
      // Concurrent calls may share one write: lockFor sees all of its deliveries at once.
      const [a, b] = await Promise.all([
        jobs.insert(first, (all) => all.map((_, i) => i < 2)),
        jobs.insert(second, (all) => all.map((_, i) => i < 2)),
      ]);
      const locked = [...a, ...b];
      t.true(locked.length >= 2 && locked.length <= 4);
      for (const job of locked) {
        t.true(job.lockedAt.getTime() >= before - 1000);
        const stored = await jobs.get(job.id);
        t.is(stored?.lockedAt?.getTime(), job.lockedAt.getTime());
        t.is(stored?.lastModifiedBy, "instance-1");
        t.is(stored?.endpoint, job.endpoint);
      }
      for (const delivery of [...first, ...second]) {
        t.is((await opened.store.notifications.get(delivery.notification.id))?.status, "pending");
        const job = await jobs.get(delivery.notification.id);
        t.truthy(job?.nextRunAt, "due");
        t.is(job?.clientId, clientId);
      }
      t.deepEqual(await jobs.insert([], unlocked), []);
      t.like(await jobs.counts(), { due: 5 - locked.length, locked: locked.length });
    },
  );

  testOn(test, target)(
    `${target.name}: a lock takes due jobs oldest first, within each endpoint's and client's budget, and says when more are due`,
    async (t) => {
      const { opened, jobs, clientId } = await openJobs(t, target);
      const subscription = await subscribe(opened, clientId);
      const other = (await opened.store.clients.ensureWithKey("other", newId("cli"))).id;
      const otherSubscription = await subscribe(opened, other);
      const hung = deliveries(subscription, 30, `${clientId} https://hung.example`);
      await jobs.insert(hung, unlocked);
      await jobs.insert(deliveries(subscription, 5, `${clientId} https://fine.example`), unlocked);
      await jobs.insert(deliveries(otherSubscription, 5), unlocked);

      // The hung endpoint has no budget: its jobs are neither taken nor counted.
      const fair = await jobs.lockDue(
        request(100, { endpointBudgets: new Map([[`${clientId} https://hung.example`, 0]]), defaultPerEndpoint: 3 }),
      );
      t.is(fair.jobs.length, 6, "three of each other endpoint");
      t.false(fair.jobs.some((job) => job.endpoint.endsWith("hung.example")));
      t.true(fair.drained, "nothing else eligible was due");
      for (const job of fair.jobs) t.is((await jobs.get(job.id))?.lockedAt?.getTime(), job.lockedAt.getTime());

      const capped = await jobs.lockDue(request(100, { clientBudgets: new Map([[clientId, 4]]), defaultPerClient: 100 }));
      t.is(capped.jobs.filter((job) => job.clientId === clientId).length, 4, "the client's budget across its endpoints");
      t.is(capped.jobs.filter((job) => job.clientId === other).length, 2, "the rest of the other client's");

      const window = await jobs.lockDue(request(5));
      t.is(window.jobs.length, 5);
      t.false(window.drained, "a full window: more may be due");
      const sorted = [...window.jobs].sort((x, y) => (x.nextRunAt?.getTime() ?? 0) - (y.nextRunAt?.getTime() ?? 0));
      t.deepEqual(window.jobs, sorted, "oldest due first");
    },
  );

  testOn(test, target)(`${target.name}: two instances locking at once never take the same job; a dead holder's lock expires`, async (t) => {
    const { opened, jobs, clientId } = await openJobs(t, target, "instance-1", 60_000);
    const second = createJobStore(opened.database, { owner: "instance-2", lockLifetimeMs: 60_000 });
    // A third instance that presumes a holder dead after a second.
    const impatient = createJobStore(opened.database, { owner: "instance-3", lockLifetimeMs: 1_000 });
    const subscription = await subscribe(opened, clientId);
    await jobs.insert(deliveries(subscription, 40), unlocked);
    const ids: string[] = [];
    // Rows one statement reads but leaves are skipped by the other until it ends: lock until all are held.
    for (let round = 0; round < 10 && ids.length < 40; round++) {
      const [a, b] = await Promise.all([jobs.lockDue(request(25)), second.lockDue(request(25))]);
      ids.push(...[...a.jobs, ...b.jobs].map((job) => job.id));
    }
    t.is(new Set(ids).size, ids.length, "no job twice");
    t.is(ids.length, 40);
    t.deepEqual((await jobs.lockDue(request(10))).jobs, [], "all held");
    // Past its lock lifetime, a lock is presumed dead and its job is taken.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const taken = await impatient.lockDue(request(100));
    t.is(taken.jobs.length, 40, "every expired lock");
    t.true(taken.jobs.every((job) => job.lastModifiedBy === "instance-3"));
  });

  testOn(test, target)(
    `${target.name}: expired locks of an endpoint with no budget are left for later, not in the way of others'`,
    async (t) => {
      const { opened, jobs, clientId } = await openJobs(t, target, "instance-1", 60_000);
      const impatient = createJobStore(opened.database, { owner: "instance-2", lockLifetimeMs: 1_000 });
      const subscription = await subscribe(opened, clientId);
      const hung = `${clientId} https://hung.example`;
      const other = `${clientId} https://other.example`;
      await jobs.insert(deliveries(subscription, 20, hung), unlocked);
      await jobs.insert(deliveries(subscription, 5, other), unlocked);
      t.is((await jobs.lockDue(request(25))).jobs.length, 25);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      // The hung endpoint's expired locks come first and would fill a window of 5.
      const taken = await impatient.lockDue(request(5, { endpointBudgets: new Map([[hung, 0]]) }));
      t.deepEqual(
        taken.jobs.map((job) => job.endpoint),
        Array(5).fill(other),
      );
    },
  );

  testOn(test, target)(`${target.name}: unlock, renew, save and remove act only while the job still has the lock they name`, async (t) => {
    const { opened, jobs, clientId } = await openJobs(t, target);
    const subscription = await subscribe(opened, clientId);
    await jobs.insert(deliveries(subscription, 4), unlocked);
    const { jobs: locked } = await jobs.lockDue(request(4));
    const [first, second, third, fourth] = locked as [LockedJob, LockedJob, LockedJob, LockedJob];
    const stale = (job: LockedJob) => new Date(job.lockedAt.getTime() - 5000);
    await jobs.unlock([first, { ...second, lockedAt: stale(second) }]);
    t.is((await jobs.get(first.id))?.lockedAt, undefined);
    t.is((await jobs.get(second.id))?.lockedAt?.getTime(), second.lockedAt.getTime(), "a lock taken since is kept");

    // A run that ends: its retry is scheduled and its lock released.
    const retryAt = new Date(Date.now() + 60_000);
    const state = {
      id: third.id,
      heldLock: third.lockedAt,
      nextRunAt: retryAt,
      failCount: 1,
      failReason: "receiver answered 500",
      failedAt: new Date(),
    };
    t.deepEqual(await jobs.save([{ ...state, heldLock: stale(third) }]), [false], "a run that lost its lock writes nothing");
    t.is((await jobs.get(third.id))?.lockedAt?.getTime(), third.lockedAt.getTime());
    t.deepEqual(await jobs.save([state]), [true]);
    const stored = await jobs.get(third.id);
    t.like(stored, { failCount: 1, failReason: "receiver answered 500" });
    t.is(stored?.nextRunAt?.getTime(), retryAt.getTime());
    t.is(stored?.lockedAt, undefined);
    t.deepEqual(await jobs.save([state]), [false], "its lock is released: written once");
    // A run that renews its lock (Agenda's touch), then finishes under the new one; the renewal moves the lock alone.
    const renewed = new Date(fourth.lockedAt.getTime() + 1000);
    const scheduled = (await jobs.get(fourth.id))?.nextRunAt?.getTime();
    t.deepEqual(await jobs.renew([{ id: fourth.id, heldLock: stale(fourth), lockedAt: renewed }]), [false], "not a lock it lost");
    t.deepEqual(await jobs.renew([{ id: fourth.id, heldLock: fourth.lockedAt, lockedAt: renewed }]), [true]);
    const renewedJob = await jobs.get(fourth.id);
    t.is(renewedJob?.lockedAt?.getTime(), renewed.getTime());
    t.is(renewedJob?.nextRunAt?.getTime(), scheduled, "its schedule stays as stored");
    t.like(await jobs.counts(), { due: 1, scheduled: 1, locked: 2 });

    t.deepEqual(await jobs.remove([{ id: fourth.id, heldLock: fourth.lockedAt }]), [], "not under the lock it renewed away from");
    t.deepEqual(
      await jobs.remove([
        { id: fourth.id, heldLock: renewed },
        { id: newId("ntf"), heldLock: renewed },
      ]),
      [fourth.id],
    );
    t.is(await jobs.get(fourth.id), undefined);
    t.deepEqual(await jobs.save([{ id: fourth.id, heldLock: renewed, nextRunAt: new Date() }]), [false], "a removed job is not saved back");
    t.is((await opened.store.notifications.get(fourth.id))?.id, fourth.id, "the notification stays");
  });

  testOn(test, target)(
    `${target.name}: a run's last attempt is recorded with its notification's end, and its job deleted only under the held lock`,
    async (t) => {
      const { opened, jobs, clientId } = await openJobs(t, target);
      const subscription = await subscribe(opened, clientId);
      await jobs.insert(deliveries(subscription, 2), unlocked);
      const [delivered, lost] = (await jobs.lockDue(request(2))).jobs as [LockedJob, LockedJob];
      const attemptOf = (job: LockedJob, statusCode: number) => ({
        notificationId: job.id,
        attempt: 0,
        startedAt: new Date(),
        durationMs: 5,
        statusCode,
        succeeded: statusCode === 200,
      });
      const stale = new Date(lost.lockedAt.getTime() - 5000);
      t.deepEqual(
        await jobs.finish([
          { attempt: attemptOf(delivered, 200), status: "delivered", heldLock: delivered.lockedAt },
          { attempt: attemptOf(lost, 410), status: "failed", heldLock: stale },
        ]),
        [true, false],
      );
      t.is(await jobs.get(delivered.id), undefined, "its job is gone");
      t.like(await opened.store.notifications.get(delivered.id), { status: "delivered", attemptCount: 1 });
      t.like(await opened.store.notifications.listAttempts(delivered.id), [{ attempt: 0, statusCode: 200, succeeded: true }]);
      t.is(
        (await jobs.get(lost.id))?.lockedAt?.getTime(),
        lost.lockedAt.getTime(),
        "a run that lost its lock leaves the job to its holder",
      );
      t.like(await opened.store.notifications.get(lost.id), { status: "failed", attemptCount: 1 }, "and still records its attempt");
    },
  );

  testOn(test, target)(
    `${target.name}: a run's failed attempt is recorded with its job's retry, which is saved only under the held lock`,
    async (t) => {
      const { opened, jobs, clientId } = await openJobs(t, target);
      const subscription = await subscribe(opened, clientId);
      await jobs.insert(deliveries(subscription, 2), unlocked);
      const [retried, lost] = (await jobs.lockDue(request(2))).jobs as [LockedJob, LockedJob];
      const attemptOf = (job: LockedJob) => ({
        notificationId: job.id,
        attempt: 0,
        startedAt: new Date(),
        durationMs: 5,
        statusCode: 503,
        succeeded: false,
      });
      const nextRunAt = new Date(Date.now() + 60_000);
      const failedAt = new Date();
      const stateOf = (job: LockedJob, heldLock: Date) => ({
        id: job.id,
        heldLock,
        nextRunAt,
        lastRunAt: failedAt,
        lastFinishedAt: failedAt,
        failCount: 1,
        failReason: "receiver answered 503",
        failedAt,
      });
      const stale = new Date(lost.lockedAt.getTime() - 5000);
      t.deepEqual(
        await jobs.retry([
          { attempt: attemptOf(retried), state: stateOf(retried, retried.lockedAt) },
          { attempt: attemptOf(lost), state: stateOf(lost, stale) },
        ]),
        [true, false],
      );
      const saved = await jobs.get(retried.id);
      t.is(saved?.lockedAt, undefined, "its lock is released");
      t.is(saved?.nextRunAt?.getTime(), nextRunAt.getTime(), "its retry is due when asked");
      t.like(saved, { failCount: 1, failReason: "receiver answered 503" });
      t.like(await opened.store.notifications.get(retried.id), { status: "pending", attemptCount: 1 });
      const attempts = await opened.store.notifications.listAttempts(retried.id);
      t.is(attempts.length, 1);
      t.like(attempts, [{ attempt: 0, statusCode: 503, succeeded: false }]);
      t.is(
        (await jobs.get(lost.id))?.lockedAt?.getTime(),
        lost.lockedAt.getTime(),
        "a run that lost its lock leaves the job to its holder",
      );
      t.like(await opened.store.notifications.get(lost.id), { status: "pending", attemptCount: 1 }, "and still records its attempt");
      t.false(
        (await jobs.lockDue(request(2))).jobs.some((job) => job.id === retried.id),
        "the retry is not due before its time",
      );
    },
  );

  testOn(test, target)(`${target.name}: an idempotency key stores once, also for concurrent twins; keys are per client`, async (t) => {
    const { opened, jobs, clientId } = await openJobs(t, target);
    const subscription = await subscribe(opened, clientId);
    const batch = deliveries(subscription, 2);
    const first = await jobs.insertOnce(clientId, "key-1", batch);
    t.deepEqual(first, { ids: batch.map((d) => d.notification.id), duplicate: false });
    for (const delivery of batch) t.truthy(await jobs.get(delivery.notification.id), "queued");
    const replay = await jobs.insertOnce(clientId, "key-1", deliveries(subscription, 1));
    t.deepEqual(replay, { ids: first.ids, duplicate: true });
    const other = (await opened.store.clients.ensureWithKey("someone else", newId("cli"))).id;
    t.false((await jobs.insertOnce(other, "key-1", [])).duplicate, "keys are per client");
    const [a, b] = await Promise.all([
      jobs.insertOnce(clientId, "key-2", deliveries(subscription, 1)),
      jobs.insertOnce(clientId, "key-2", deliveries(subscription, 1)),
    ]);
    t.deepEqual(a.ids, b.ids, "concurrent twins agree");
    t.not(a.duplicate, b.duplicate);
    t.like(await jobs.counts(), { due: 3, locked: 0 });
  });
}

// SQL stores: an older version's jobs (Agenda's own table) and notifications it accepted but never queued are
// taken over at start; a job left without a schedule is due again.
for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  testOn(test, target)(`${target.name}: jobs an older version left behind are taken over at start`, async (t) => {
    const { opened, clientId } = await openJobs(t, target);
    if (opened.database.kind !== "postgres") return t.fail("a SQL target");
    const subscription = await subscribe(opened, clientId, "HTTPS://Receiver.Example:8443/hook?x=1");
    const [queued, unqueued, done] = deliveries(subscription, 3).map((d) => d.notification) as [Notification, Notification, Notification];
    const pool = opened.database.api;
    const insert = `INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, scheduled, created_at, updated_at)
                    VALUES ($1, $2, $3, 'Order.Created', '{}', $4, 0, $5, now(), now())`;
    await pool.query(insert, [queued.id, subscription.id, clientId, "pending", true]);
    await pool.query(insert, [unqueued.id, subscription.id, clientId, "pending", false]);
    await pool.query(insert, [done.id, subscription.id, clientId, "delivered", true]);
    await pool.query(`CREATE TABLE agenda_jobs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL, next_run_at timestamptz,
                      fail_count int, data jsonb)`);
    const retryAt = new Date(Date.now() + 600_000);
    await pool.query("INSERT INTO agenda_jobs (name, next_run_at, fail_count, data) VALUES ('deliver-notification', $1, 2, $2)", [
      retryAt,
      { notificationId: queued.id },
    ]);
    const jobs = createJobStore(opened.database, { owner: "upgraded", lockLifetimeMs: 30_000 });
    await jobs.prepare();
    await jobs.prepare(); // and again at the next start: nothing twice
    const kept = await jobs.get(queued.id);
    t.is(kept?.nextRunAt?.getTime(), retryAt.getTime(), "a scheduled retry stays scheduled");
    t.is(kept?.failCount, 2);
    t.is(kept?.endpoint, `${clientId} https://receiver.example:8443`);
    t.truthy((await jobs.get(unqueued.id))?.nextRunAt, "an unqueued one is due now");
    t.is(await jobs.get(done.id), undefined, "a delivered one needs no job");
    const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM agenda_jobs");
    t.is(rows[0]?.n, 0);
  });

  testOn(test, target)(`${target.name}: a job left without a schedule is due again, once handed back or at the next start`, async (t) => {
    const { opened, jobs, clientId } = await openJobs(t, target);
    if (opened.database.kind !== "postgres") return t.fail("a SQL target");
    const subscription = await subscribe(opened, clientId);
    await jobs.insert(deliveries(subscription, 2), unlocked);
    const [handedBack, released] = (await jobs.lockDue(request(2))).jobs as [LockedJob, LockedJob];
    const pool = opened.database.api;
    await pool.query("UPDATE wh_delivery_jobs SET next_run_at = NULL");
    await pool.query("UPDATE wh_delivery_jobs SET locked_at = NULL, locked_by = NULL WHERE id = $1", [released.id]);
    await jobs.unlock([handedBack]);
    t.truthy((await jobs.get(handedBack.id))?.nextRunAt, "handed back: due now");
    t.is((await jobs.get(released.id))?.nextRunAt, null);
    await jobs.prepare();
    t.truthy((await jobs.get(released.id))?.nextRunAt, "at the next start: due now");
    t.is((await jobs.lockDue(request(10))).jobs.length, 2);
  });
}

// Two runs of one job under different locks (an instance took back its own expired job while the old run
// went on) can share a statement: only the one holding the lock is told it wrote.
for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  testOn(test, target)(`${target.name}: in one statement, only the run holding the job's lock is told it wrote`, async (t) => {
    const { opened, jobs, clientId } = await openJobs(t, target);
    const subscription = await subscribe(opened, clientId);
    await jobs.insert(deliveries(subscription, 2), unlocked);
    const [saved, removed] = (await jobs.lockDue(request(2))).jobs as [LockedJob, LockedJob];
    const stale = (job: LockedJob) => new Date(job.lockedAt.getTime() - 60_000);
    const state = (job: LockedJob, heldLock: Date) => ({ id: job.id, heldLock, nextRunAt: new Date(Date.now() + 60_000), failCount: 1 });
    t.deepEqual(await jobs.save([state(saved, stale(saved)), state(saved, saved.lockedAt)]), [false, true]);
    t.deepEqual(
      await jobs.remove([
        { id: removed.id, heldLock: stale(removed) },
        { id: removed.id, heldLock: removed.lockedAt },
      ]),
      [removed.id],
    );
  });
}

/**
 * A connection that plans as the service's pools do (generic plans, no sequential scans) on a fresh job store,
 * and a way to fill it with 20,000 notifications, each with a job due at `nextRunAt` (SQL), the first `locked`
 * of them locked.
 */
async function plannerProbe(t: ExecutionContext, target: StoreTarget) {
  const { opened, clientId, databaseUrl } = await openJobs(t, target);
  if (!databaseUrl) throw new Error("a PostgreSQL target has a DATABASE_URL");
  const subscription = await subscribe(opened, clientId);
  const client = new pg.Client(withSettings(databaseUrl, STABLE_PLANS));
  await client.connect();
  t.teardown(() => client.end());
  /** Jobs `from` to `from + count - 1` (20 000 by default), the first `locked` of them locked now. */
  const addBacklog = (jobs: { nextRunAt: string; locked: number; from?: number; count?: number }) =>
    client.query(
      `WITH n AS (
         INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, scheduled, created_at, updated_at)
         SELECT 'ntf_' || lpad(to_hex(g), 32, '0'), $1, $2, 'Order.Created', '{}', 'pending', 0, true, now(), now()
         FROM generate_series($4::int, $4::int + $5::int - 1) AS g RETURNING id
       ), locked AS (SELECT id, id < 'ntf_' || lpad(to_hex($4::int + $3::int), 32, '0') AS locked FROM n)
       INSERT INTO wh_delivery_jobs (id, endpoint, client_id, next_run_at, locked_at, locked_by)
       SELECT id, 'e', $2, ${jobs.nextRunAt}, CASE WHEN locked THEN now() END, CASE WHEN locked THEN 'probe' END FROM locked`,
      [subscription.id, clientId, jobs.locked, jobs.from ?? 1, jobs.count ?? 20_000],
    );
  /**
   * Prepares each statement and makes its one generic plan on the tables as they are now (explaining it makes
   * it), then adds `backlog`: the plans each then runs with, by name.
   */
  const plansAfterBacklog = async (statements: Record<string, [string, string]>, backlog: Parameters<typeof addBacklog>[0]) => {
    for (const [name, [text, args]] of Object.entries(statements)) {
      await client.query(`PREPARE ${name}_planned AS ${text}`);
      await planOf(client, `EXECUTE ${name}_planned${args}`);
    }
    await addBacklog(backlog);
    const plans: Array<[string, string]> = [];
    for (const [name, [, args]] of Object.entries(statements)) plans.push([name, await planOf(client, `EXECUTE ${name}_planned${args}`)]);
    return plans;
  };
  return { client, addBacklog, plansAfterBacklog };
}

// The lock statement, prepared while the table is empty as on a new database, keeps to its indexes once
// 20 000 jobs wait: neither the due scan nor the expired-lock lookup may walk the whole backlog.
for (const target of storeTargets().filter((t) => t.name === "postgres")) {
  testOn(test, target)(`${target.name}: the lock statement's one plan stays on its indexes as the backlog grows`, async (t) => {
    const { client, addBacklog } = await plannerProbe(t, target);
    await client.query(`PREPARE lock_probe AS ${LOCK_DUE}`);
    const args = `(256, 512, 'probe', now(), now() - interval '1 minute', '{}', '{}', 16, '{}', '{}', 64, '{}', '{}')`;
    await client.query(`EXECUTE lock_probe${args}`);
    await addBacklog({ nextRunAt: "now() - interval '1 hour'", locked: 0 });
    const plan = await planOf(client, `EXECUTE lock_probe${args}`);
    t.regex(plan, /wh_delivery_jobs_due_idx/, plan);
    t.regex(plan, /wh_delivery_jobs_locked_idx/, plan);
    t.notRegex(plan, /Seq Scan/, plan);
    // The rows picked are locked by id, not found again by rereading every due row.
    t.deepEqual(readsNotById(plan), [], plan);
    // What /metrics reads on every scrape keeps to the same indexes.
    const counts = await planOf(client, COUNT_JOBS);
    t.regex(counts, /wh_delivery_jobs_due_idx/, counts);
    t.regex(counts, /wh_delivery_jobs_locked_idx/, counts);
    t.notRegex(counts, /Seq Scan/, counts);
  });
}

// When the queue drains, vacuum and analyze find the job table empty, and a plan made then believes it
// holds one row. The lock statement's must still find the jobs it picked by their ids, not by reading every
// job once per job picked: with a burst of 20 000 jobs behind it, that took 300 ms a statement and
// delivered a few hundred notifications a second, until the next ANALYZE.
for (const target of storeTargets().filter((t) => t.name === "postgres")) {
  for (const before of ["drained", "quiet"] as const) {
    testOn(test, target)(
      `${target.name}: the lock statement's plan made on a ${before}, analyzed table stays on its indexes for a burst`,
      async (t) => {
        const { client, addBacklog } = await plannerProbe(t, target);
        // Quiet: 2 000 jobs in flight (locked), none due.
        if (before === "quiet") await addBacklog({ nextRunAt: "now()", locked: 2000, count: 2000 });
        await client.query("VACUUM ANALYZE wh_delivery_jobs, wh_notifications");
        await client.query(`PREPARE lock_probe AS ${LOCK_DUE}`);
        const args = `(512, 256, 'probe', now(), now() - interval '1 minute', '{}', '{}', 128, '{}', '{}', 384, '{}', '{}')`;
        await client.query(`EXECUTE lock_probe${args}`);
        await addBacklog({ nextRunAt: "now() - interval '1 hour'", locked: 0, from: 10_000 });
        const plan = await planOf(client, `EXECUTE lock_probe${args}`);
        t.deepEqual(readsNotById(plan), [], plan);
      },
    );
  }
}

/**
 * The plan's reads of the job, notification and subscription tables, other
 * than the due and expired scans, that do not look their rows up by key: a
 * read of jobs or notifications must have an index condition (or a bitmap's
 * recheck) on `id` right under it, through the primary key; a read of
 * subscriptions, one on `id` or `client_id`.
 */
function readsNotById(plan: string): string[] {
  const lines = plan.split("\n");
  return lines.filter((line, index) => {
    if (!/Scan .* on wh_(delivery_jobs|notifications|subscriptions)\b/.test(line) || /_due_idx|_locked_idx/.test(line)) return false;
    const condition = lines[index + 1] ?? "";
    const byPrimaryKey = /_pkey/.test(line) || /Bitmap Index Scan on wh_\w+_pkey/.test(lines[index + 2] ?? "");
    if (byPrimaryKey && /(Index|Recheck) Cond: \(id = /.test(condition)) return false;
    // A client's subscriptions, through an index that starts with the client.
    return !(/on wh_subscriptions\b/.test(line) && /_client_/.test(line) && /Index Cond: \(\(?client_id = /.test(condition));
  });
}

// A run's writes name their jobs by id and held lock. With 200 of 20 000 jobs locked, the locked-jobs index
// looks small to the planner, but under load it holds an entry for every job locked since the last vacuum:
// each of these statements must find its rows through the primary key, never through that index (the last
// attempt's record, which deletes its job, included).
for (const target of storeTargets().filter((t) => t.name === "postgres")) {
  testOn(test, target)(`${target.name}: a run's writes find their jobs by id, not through the locked-jobs index`, async (t) => {
    const { client, addBacklog } = await plannerProbe(t, target);
    await addBacklog({ nextRunAt: "now()", locked: 200 });
    await client.query("ANALYZE wh_delivery_jobs");
    for (const [name, [text, args]] of Object.entries(runWrites())) {
      await client.query(`PREPARE ${name}_probe AS ${text}`);
      const plan = await planOf(client, `EXECUTE ${name}_probe${args}`);
      t.regex(plan, /wh_delivery_jobs_pkey/, `${name}:\n${plan}`);
      t.notRegex(plan, /wh_delivery_jobs_locked_idx|Seq Scan/, `${name}:\n${plan}`);
    }
  });

  // The same statements, their plans made while the queue was drained (both tables analyzed empty), then run
  // with 20 000 jobs: each still finds its rows by id, never by reading a table once per row.
  testOn(test, target)(`${target.name}: a run's writes planned on drained, analyzed tables still find their rows by id`, async (t) => {
    const { client, plansAfterBacklog } = await plannerProbe(t, target);
    await client.query("VACUUM ANALYZE wh_delivery_jobs, wh_notifications");
    for (const [name, plan] of await plansAfterBacklog(runWrites(), { nextRunAt: "now()", locked: 200 })) {
      t.deepEqual(readsNotById(plan), [], `${name}:\n${plan}`);
    }
  });
}

// What a publish and a delivery read, planned on drained and analyzed tables, then run beside 20 000 notifications.
for (const target of storeTargets().filter((t) => t.name === "postgres")) {
  testOn(test, target)(
    `${target.name}: the fan-out and delivery reads planned on drained, analyzed tables find their rows by id`,
    async (t) => {
      const { client, plansAfterBacklog } = await plannerProbe(t, target);
      await client.query("VACUUM ANALYZE wh_delivery_jobs, wh_notifications, wh_subscriptions");
      const reads: Record<string, [string, string]> = {
        delivery: [READ_FOR_DELIVERY, "(ARRAY['ntf_1', 'ntf_2'])"],
        fanOut: [SUBSCRIPTIONS_FOR_EVENTS, "(ARRAY['cli_1'], ARRAY['Order.Created'])"],
        // A publish's insert, its fan-out checked against the client's enabled subscriptions to the event.
        checkedInsert: [
          INSERT_CHECKED,
          `(ARRAY['ntf_x'], ARRAY['sub_x'], ARRAY['cli_1'], ARRAY['Order.Created'], ARRAY['{}'], ARRAY['pending'], ARRAY[0],
            ARRAY[NULL]::text[], ARRAY[now()], ARRAY[now()], ARRAY['ntf_x'], ARRAY['e'], ARRAY[false], now(), 'probe',
            ARRAY[NULL]::text[], ARRAY['cli_1'], ARRAY['Order.Created'], ARRAY['sub_x:1'], ARRAY['ntf_x'])`,
        ],
      };
      for (const [name, plan] of await plansAfterBacklog(reads, { nextRunAt: "now()", locked: 0 })) {
        t.deepEqual(readsNotById(plan), [], `${name}:\n${plan}`);
        if (name === "checkedInsert") t.regex(plan, /wh_subscriptions_client_event_idx/, plan);
      }
    },
  );
}

/** A run's writes (see the test above), with arguments naming two jobs that do not exist. */
function runWrites(): Record<string, [string, string]> {
  const ids = "ARRAY['ntf_1', 'ntf_2']";
  const at = "ARRAY[now(), now()]";
  return {
    save: [SAVE, `(${ids}, ${at}, ${at}, ${at}, ${at}, ARRAY[0, 0], ARRAY[NULL, NULL]::text[], ${at})`],
    renew: [RENEW, `(${ids}, ${at}, ${at})`],
    remove: [REMOVE, `(${ids}, ${at})`],
    unlock: [UNLOCK, `(${ids}, ${at})`],
    finish: [
      FINISH,
      `(${ids}, ARRAY[0, 0], ${at}, ARRAY[1, 1], ARRAY[200, 200], ARRAY['', ''], ARRAY[NULL, NULL]::text[], ARRAY[true, true], ARRAY['delivered', 'delivered'], ${at})`,
    ],
    retry: [
      RETRY,
      `(${ids}, ARRAY[0, 0], ${at}, ARRAY[1, 1], ARRAY[503, 503], ARRAY['', ''], ARRAY[NULL, NULL]::text[], ARRAY[false, false], ARRAY['pending', 'pending'], ${at}, ${at}, ${at}, ${at}, ARRAY[1, 1], ARRAY['', ''], ${at})`,
    ],
  };
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: counts say what is due, scheduled and locked, and since when the oldest due job waits`,
    async (t) => {
      const { opened, jobs, clientId } = await openJobs(t, target);
      const subscription = await subscribe(opened, clientId);
      t.like(await jobs.counts(), { due: 0, scheduled: 0, locked: 0, oldestDueAt: null });
      const before = Date.now();
      const traced = deliveries(subscription, 3).map((delivery) => ({
        ...delivery,
        traceContext: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      }));
      await jobs.insert(traced, unlocked);
      const counts = await jobs.counts();
      t.like(counts, { due: 3, scheduled: 0, locked: 0 });
      const oldest = counts.oldestDueAt?.getTime() ?? 0;
      t.true(oldest >= before - 1000 && oldest <= Date.now(), String(counts.oldestDueAt));

      const [first, second] = (await jobs.lockDue(request(2))).jobs;
      if (!first || !second) return t.fail("two jobs locked");
      t.is(first.traceContext, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "the trace context comes back with the job");
      await jobs.save([{ id: first.id, heldLock: first.lockedAt, nextRunAt: new Date(Date.now() + 3_600_000) }]);
      t.like(await jobs.counts(), { due: 1, scheduled: 1, locked: 1 });
      t.is((await jobs.get(first.id))?.traceContext, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    },
  );
}

for (const target of storeTargets()) {
  testOn(test, target)(`${target.name}: a client's budget counts only what its endpoints' budgets let through`, async (t) => {
    const { opened, jobs, clientId } = await openJobs(t, target);
    const subscription = await subscribe(opened, clientId);
    const slow = `${clientId} https://slow.example`;
    const fast = `${clientId} https://fast.example`;
    await jobs.insert(deliveries(subscription, 30, slow), unlocked);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await jobs.insert(deliveries(subscription, 10, fast), unlocked);
    // The slow endpoint's older rows come first; its budget of 3 must not use up the client's 20.
    const batch = await jobs.lockDue(
      request(100, { endpointBudgets: new Map([[slow, 3]]), clientBudgets: new Map([[clientId, 20]]), defaultPerEndpoint: 100 }),
    );
    t.is(batch.jobs.filter((job) => job.endpoint === slow).length, 3);
    t.is(batch.jobs.filter((job) => job.endpoint === fast).length, 10, "every job of the other endpoint, within the client's 20");
    t.deepEqual(batch.passedOver.endpoints, [slow], "the slow endpoint's budget left jobs due");
    t.deepEqual(batch.passedOver.clients, []);
  });
}

// A lock on PostgreSQL (and PGlite) hands each job out with what its attempt reads, so the attempt need not read it again.
for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  testOn(test, target)(`${target.name}: a lock hands each job out with its notification and subscription`, async (t) => {
    const { opened, jobs, clientId } = await openJobs(t, target);
    const kept = await subscribe(opened, clientId);
    const deleted = await subscribe(opened, clientId, "https://other.example/hook");
    const toKept = deliveries(kept, 3);
    const [toDeleted] = deliveries(deleted, 1, `${clientId} https://other.example`);
    if (!toDeleted) return t.fail("a delivery");
    await jobs.insert([...toKept, toDeleted], unlocked);
    await opened.store.subscriptions.delete(deleted.id);
    const locked = new Map((await jobs.lockDue(request(10))).jobs.map((job) => [job.id, job]));
    // The subscription's columns come once per statement; every job of it reads the whole subscription.
    for (const delivery of toKept) {
      t.like(locked.get(delivery.notification.id)?.read, {
        notification: { id: delivery.notification.id, status: "pending", attemptCount: 0, body: "{}" },
        subscription: { id: kept.id, url: kept.url, enabled: true, publicKeyPem: kept.publicKeyPem, privateKeyPem: kept.privateKeyPem },
      });
    }
    const orphan = locked.get(toDeleted.notification.id)?.read;
    t.is(orphan?.notification.id, toDeleted.notification.id);
    t.is(orphan?.subscription, undefined, "a deleted subscription reads as none");
  });
}

/**
 * Checked inserts (fan-out-versions.ts): what lets an instance keep fan-outs
 * while others write the subscriptions. Run on both SQL stores, the
 * embedded one with the check turned on as on a shared server.
 */
for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  async function checkedJobs(t: ExecutionContext) {
    const { opened, clientId } = await openJobs(t, target);
    if (opened.database.kind !== "postgres") throw new Error("a SQL store");
    const { api, bookkeeping } = opened.database;
    const jobs = new PostgresJobStore({ api, bookkeeping }, { owner: "instance-1", lockLifetimeMs: 30_000, checkFanOuts: true });
    await jobs.prepare();
    // Fan-outs as a publish reads them: through the store's own read, which records each row's version.
    const fanOut = (client = clientId, event = "Order.Created") =>
      opened.store.subscriptions.listEnabledForEvent(client, event, { fresh: true });
    // Another instance's write: straight to the table, past anything this one keeps.
    const elsewhere = (sql: string, values: unknown[]) => api.query(sql, values);
    const stored = async (batch: readonly NewDelivery[]) =>
      (await Promise.all(batch.map((d) => opened.store.notifications.get(d.notification.id)))).filter(Boolean).length;
    return { opened, jobs, clientId, fanOut, elsewhere, stored };
  }

  testOn(test, target)(
    `${target.name}: a checked insert stores a fan-out only while its subscriptions are, as read, the event's enabled ones`,
    async (t) => {
      const { opened, jobs, clientId, fanOut, elsewhere, stored } = await checkedJobs(t);
      const first = await subscribe(opened, clientId);
      const read = await fanOut();
      const accepted = deliveries(first, 2);
      t.deepEqual(await jobs.insert(accepted, unlocked, read), []);
      t.is(await stored(accepted), 2, "unchanged: stored");

      const changes: Array<[string, () => Promise<unknown>]> = [
        ["a field written", () => elsewhere("UPDATE wh_subscriptions SET url = 'https://moved.example/hook' WHERE id = $1", [first.id])],
        ["its failure streak begun", () => elsewhere("UPDATE wh_subscriptions SET failing_since = now() WHERE id = $1", [first.id])],
        ["a subscription added", () => subscribeElsewhere(opened, clientId)],
        ["one disabled", () => elsewhere("UPDATE wh_subscriptions SET enabled = false WHERE id = $1", [first.id])],
      ];
      for (const [change, make] of changes) {
        const before = await fanOut();
        await make();
        const refused = deliveries(first, 2);
        await t.throwsAsync(jobs.insert(refused, unlocked, before), { instanceOf: FanOutChangedError }, change);
        t.is(await stored(refused), 0, `${change}: nothing stored`);
        t.is(await jobs.get(refused[0]?.notification.id ?? ""), undefined, `${change}: no job`);
      }
      // Read again, it goes in; without a fan-out to check (a redelivery), it always does.
      const again = await fanOut();
      const now = deliveries(again[0] ?? first, 1);
      await jobs.insert(now, unlocked, again);
      t.is(await stored(now), 1);
      const unchecked = deliveries(first, 1);
      await jobs.insert(unchecked, unlocked);
      t.is(await stored(unchecked), 1);

      // A streak already on is not written again: a fan-out read since it began stays current.
      const added = again.find((s) => s.url === "https://added.example/hook");
      if (!added) return t.fail("the subscription added elsewhere");
      await opened.store.subscriptions.markFailing(added.id, new Date(1_000));
      const marked = await fanOut();
      t.deepEqual(await opened.store.subscriptions.markFailing(added.id, new Date(2_000)), new Date(1_000));
      const during = deliveries(added, 1);
      await jobs.insert(during, unlocked, marked);
      t.is(await stored(during), 1);
    },
  );

  testOn(test, target)(
    `${target.name}: in one shared statement only the call whose fan-out changed is refused; a refused idempotent insert leaves its key free`,
    async (t) => {
      const { opened, jobs, clientId, fanOut, elsewhere, stored } = await checkedJobs(t);
      const mine = await subscribe(opened, clientId);
      const other = (await opened.store.clients.ensureWithKey("other", newId("cli"))).id;
      const theirs = await subscribe(opened, other);
      const [stale, current] = [await fanOut(), await fanOut(other)];
      await elsewhere("UPDATE wh_subscriptions SET description = 'changed' WHERE id = $1", [mine.id]);
      const [a, b] = [deliveries(mine, 2), deliveries(theirs, 3)];
      // Issued together, they share one statement (coalescer.ts).
      const [refused, accepted] = await Promise.allSettled([jobs.insert(a, unlocked, stale), jobs.insert(b, unlocked, current)]);
      t.true(refused.status === "rejected" && refused.reason instanceof FanOutChangedError);
      t.is(accepted.status, "fulfilled");
      t.is(await stored(a), 0);
      t.is(await stored(b), 3);

      const once = deliveries(mine, 1);
      await t.throwsAsync(jobs.insertOnce(clientId, "key-1", once, stale), { instanceOf: FanOutChangedError });
      t.is(await stored(once), 0);
      const retried = deliveries(mine, 1);
      t.deepEqual(await jobs.insertOnce(clientId, "key-1", retried, await fanOut()), {
        ids: retried.map((d) => d.notification.id),
        duplicate: false,
      });
      t.is(await stored(retried), 1);
    },
  );
}

/** A subscription of `clientId` to Order.Created inserted straight into the table, as another instance would. */
async function subscribeElsewhere(opened: OpenStore, clientId: string): Promise<void> {
  if (opened.database.kind !== "postgres") return;
  const s = subscriptionRecord(clientId, { url: "https://added.example/hook" });
  await opened.database.api.query(
    `INSERT INTO wh_subscriptions (id, client_id, event, url, description, enabled, signature_scheme, public_key_pem, private_key_pem, created_at, updated_at)
     VALUES ($1, $2, $3, $4, '', true, 'RSA_SHA256', 'pem', 'sealed', now(), now())`,
    [s.id, s.clientId, s.event, s.url],
  );
}
