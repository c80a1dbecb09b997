import { setTimeout as sleep } from "node:timers/promises";
import test, { type ExecutionContext } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import type { LockRequest } from "../../src/delivery/fairness/budgets.js";
import type { HeldJob, JobStore, LockedJob, NewDelivery } from "../../src/delivery/job-store.js";
import { endpointOf } from "../../src/domain/endpoint.js";
import { newId } from "../../src/domain/ids.js";
import type { DeliveryAttempt, Notification, Subscription } from "../../src/domain/model.js";
import { collections, toNotificationDoc } from "../../src/store/mongo/documents.js";
import { openJobs } from "../../src/store/open-jobs.js";
import { type Database, type OpenStore, openStore, type StoreConfig } from "../../src/store/open-store.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { type StoreTarget, storeTargets, testOn } from "../helpers/stores.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

/**
 * The job store's contract (delivery/job-store.ts), written once and run
 * against every store: what the delivery engine relies on. Each test has a
 * database of its own. Job state is observed only through the port: a lock
 * is still held when renewing it to its own time succeeds, a job is due when
 * a lock takes it, and counts say what waits.
 */
const log = pino({ level: "silent" });

/** A fresh database with its job store prepared and one client; `instance` opens another instance's job store on it. */
class Fixture {
  readonly jobs: JobStore;

  private constructor(
    private opened: OpenStore,
    private readonly config: StoreConfig,
    readonly clientId: string,
    private readonly lockLifetimeMs: number,
  ) {
    this.jobs = this.instance("instance-1");
  }

  static async open(t: ExecutionContext, target: StoreTarget, lockLifetimeMs = 30_000): Promise<Fixture> {
    // Teardowns run last first: the store is closed, then its database removed.
    const created = await target.create();
    t.teardown(() => created.cleanup());
    const config = loadConfig({ ...FAST_TEST_ENV, ...created.env }).store;
    const opened = await openStore(config, log);
    let fixture: Fixture | undefined;
    t.teardown(() => (fixture?.opened ?? opened).close());
    const clientId = (await opened.store.clients.ensureWithKey("jobs", newId("cli"))).id;
    fixture = new Fixture(opened, config, clientId, lockLifetimeMs);
    await fixture.jobs.prepare();
    return fixture;
  }

  get store(): OpenStore["store"] {
    return this.opened.store;
  }

  get database(): Database {
    return this.opened.database;
  }

  instance(owner: string, lockLifetimeMs = this.lockLifetimeMs): JobStore {
    return openJobs(this.opened.database, { owner, lockLifetimeMs }).jobs;
  }

  /** Closes the store and opens it again, as a restart does. */
  async reopen(): Promise<void> {
    await this.opened.close();
    this.opened = await openStore(this.config, log);
  }

  async subscribe(clientId = this.clientId, fields: Partial<Subscription> = {}): Promise<Subscription> {
    const subscription = subscriptionRecord(clientId, fields);
    await this.store.subscriptions.insert(subscription);
    return subscription;
  }
}

function deliveries(
  subscription: Subscription,
  count: number,
  endpoint = endpointOf(subscription.clientId, subscription.url),
): NewDelivery[] {
  const at = new Date();
  return Array.from({ length: count }, (): NewDelivery => {
    const notification: Notification = {
      id: newId("ntf"),
      subscriptionId: subscription.id,
      clientId: subscription.clientId,
      event: subscription.event,
      body: "{}",
      status: "pending",
      attemptCount: 0,
      createdAt: at,
      updatedAt: at,
    };
    return { notification, endpoint };
  });
}

const idsOf = (batch: ReadonlyArray<NewDelivery | LockedJob>) =>
  batch.map((item) => ("notification" in item ? item.notification.id : item.id));
const sorted = (values: readonly string[]) => [...values].sort();

/** One keyed publish, alone in its batch. */
async function insertOnce(jobs: JobStore, clientId: string, key: string, batch: readonly NewDelivery[]) {
  const [answer] = await jobs.insertBatch([{ clientId, key, deliveries: batch }]);
  if (!answer) throw new Error("a batch of one answers once");
  return answer;
}

function request(limit: number, overrides: Partial<LockRequest> = {}): LockRequest {
  return { limit, endpointBudgets: new Map(), clientBudgets: new Map(), defaultPerEndpoint: 1000, defaultPerClient: 1000, ...overrides };
}

/** The lock a job was locked with. */
const held = (job: LockedJob): HeldJob => ({ id: job.id, heldLock: job.lockedAt });
/** An older lock of the job: that of a run whose lock was since taken over. */
const stale = (job: LockedJob, ms = 5_000): HeldJob => ({ id: job.id, heldLock: new Date(job.lockedAt.getTime() - ms) });
/** Whether the job still has this lock: renewing a lock to its own time changes nothing, and answers that. */
const holds = (jobs: JobStore, job: HeldJob) => jobs.renew(job, job.heldLock);

function attemptOf(id: string, statusCode: number, attempt = 0): DeliveryAttempt {
  return { notificationId: id, attempt, startedAt: new Date(), durationMs: 5, statusCode, succeeded: statusCode < 300 };
}

/** How many of `jobs` go to each endpoint. */
function perEndpoint(jobs: readonly LockedJob[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const job of jobs) counts[job.endpoint] = (counts[job.endpoint] ?? 0) + 1;
  return counts;
}

const TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

for (const target of storeTargets()) {
  const name = target.name;

  testOn(test, target)(`${name}: insert stores each notification with a job due now, durably; calls made together all land`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe();
    t.deepEqual(await f.jobs.counts(), { due: 0, scheduled: 0, locked: 0, oldestDueAt: null });
    const traced = deliveries(subscription, 3).map((delivery) => ({ ...delivery, traceContext: TRACE }));
    const plain = deliveries(subscription, 2);
    const before = Date.now();
    // Issued together, they may share one write (coalescer.ts).
    await Promise.all([f.jobs.insert(traced), f.jobs.insert(plain)]);
    await f.jobs.insert([]);
    const counts = await f.jobs.counts();
    t.like(counts, { due: 5, scheduled: 0, locked: 0 });
    const oldest = counts.oldestDueAt?.getTime() ?? 0;
    t.true(oldest >= before - 1000 && oldest <= Date.now() + 1000, String(counts.oldestDueAt));
    for (const delivery of [...traced, ...plain])
      t.deepEqual(await f.store.notifications.get(delivery.notification.id), delivery.notification);

    // After a restart, every job is there and due, as it was accepted.
    await f.reopen();
    const restarted = f.instance("restarted");
    await restarted.prepare();
    t.like(await restarted.counts(), { due: 5, scheduled: 0, locked: 0 });
    const locked = new Map((await restarted.lockDue(request(10))).jobs.map((job) => [job.id, job]));
    t.deepEqual(sorted([...locked.keys()]), sorted(idsOf([...traced, ...plain])));
    for (const delivery of [...traced, ...plain]) {
      const job = locked.get(delivery.notification.id);
      t.is(job?.endpoint, delivery.endpoint);
      t.is(job?.clientId, f.clientId);
      t.is(job?.traceContext, delivery.traceContext, "the trace context comes back with the job");
    }
  });

  testOn(test, target)(`${name}: an insert stores all its notifications or none, and a bad one fails only its own call`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe();
    const [existing] = deliveries(subscription, 1) as [NewDelivery];
    await f.jobs.insert([existing]);
    // A batch holding a notification that is stored already, between two new ones.
    const [before, after] = deliveries(subscription, 2) as [NewDelivery, NewDelivery];
    const again = { ...existing, notification: { ...existing.notification, body: '{"again":true}' } };
    const good = deliveries(subscription, 2);
    const [refused, accepted] = await Promise.allSettled([f.jobs.insert([before, again, after]), f.jobs.insert(good)]);
    t.is(refused.status, "rejected");
    t.is(accepted.status, "fulfilled", "a call sharing the write is not refused with it");
    t.is(await f.store.notifications.get(before.notification.id), undefined, "nothing of the refused batch is stored");
    t.is(await f.store.notifications.get(after.notification.id), undefined);
    t.is((await f.store.notifications.get(existing.notification.id))?.body, "{}", "the stored one is left as it was");
    t.like(await f.jobs.counts(), { due: 3, scheduled: 0, locked: 0 }, "no job without its notification");
    t.deepEqual(sorted(idsOf((await f.jobs.lockDue(request(10))).jobs)), sorted(idsOf([existing, ...good])));
  });

  testOn(test, target)(`${name}: an idempotency key stores once, also for concurrent twins; keys are per client`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe();
    const batch = deliveries(subscription, 2);
    const first = await insertOnce(f.jobs, f.clientId, "key-1", batch);
    t.deepEqual(first, { ids: idsOf(batch), duplicate: false });
    const [replayed] = deliveries(subscription, 1) as [NewDelivery];
    t.deepEqual(await insertOnce(f.jobs, f.clientId, "key-1", [replayed]), { ids: first.ids, duplicate: true });
    t.is(await f.store.notifications.get(replayed.notification.id), undefined, "a repeated key stores nothing");
    const other = (await f.store.clients.ensureWithKey("someone else", newId("cli"))).id;
    t.false((await insertOnce(f.jobs, other, "key-1", [])).duplicate, "keys are per client");

    const twins = [deliveries(subscription, 1), deliveries(subscription, 1)] as const;
    const [a, b] = await Promise.all(twins.map((twin) => insertOnce(f.jobs, f.clientId, "key-2", twin)));
    if (!a || !b) return t.fail("both twins answer");
    t.deepEqual(a.ids, b.ids, "concurrent twins agree");
    t.not(a.duplicate, b.duplicate, "one of them stored");
    const [winner, loser] = a.duplicate ? [twins[1], twins[0]] : [twins[0], twins[1]];
    t.deepEqual(a.ids, idsOf(winner));
    t.is(await f.store.notifications.get(idsOf(loser)[0] ?? ""), undefined, "the other stored nothing");

    t.like(await f.jobs.counts(), { due: 3, scheduled: 0, locked: 0 });
    t.deepEqual(sorted(idsOf((await f.jobs.lockDue(request(10))).jobs)), sorted([...first.ids, ...a.ids]), "each stored one is due");
  });

  testOn(test, target)(`${name}: a batch stores each publish once per key, in one write, answering in order`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe();
    const other = (await f.store.clients.ensureWithKey("another", newId("cli"))).id;
    const earlier = deliveries(subscription, 2);
    await insertOnce(f.jobs, f.clientId, "seen", earlier);
    const [keyed, repeated, unkeyed, otherClients] = [
      deliveries(subscription, 2),
      deliveries(subscription, 1),
      deliveries(subscription, 1),
      deliveries(subscription, 1),
    ];
    const answers = await f.jobs.insertBatch([
      { clientId: f.clientId, key: "new", deliveries: keyed },
      { clientId: f.clientId, key: "seen", deliveries: repeated },
      { clientId: f.clientId, deliveries: unkeyed },
      { clientId: other, key: "seen", deliveries: otherClients },
      { clientId: f.clientId, key: "nothing", deliveries: [] },
    ]);
    t.deepEqual(answers, [
      { ids: idsOf(keyed), duplicate: false },
      { ids: idsOf(earlier), duplicate: true },
      { ids: idsOf(unkeyed), duplicate: false },
      { ids: idsOf(otherClients), duplicate: false },
      { ids: [], duplicate: false },
    ]);
    t.is(await f.store.notifications.get(idsOf(repeated)[0] ?? ""), undefined, "a repeated key stores nothing");
    t.deepEqual(
      await f.jobs.insertBatch([{ clientId: f.clientId, key: "nothing", deliveries: deliveries(subscription, 1) }]),
      [{ ids: [], duplicate: true }],
      "a key that stored no notification is remembered too",
    );
    const stored = [...earlier, ...keyed, ...unkeyed, ...otherClients];
    t.deepEqual(sorted(idsOf((await f.jobs.lockDue(request(20))).jobs)), sorted(idsOf(stored)), "each stored one is due at once");

    // A batch holding a notification stored already stores nothing, nor claims its keys.
    const [clash] = deliveries(subscription, 1) as [NewDelivery];
    const refused = [
      { clientId: f.clientId, key: "later", deliveries: deliveries(subscription, 1) },
      { clientId: f.clientId, deliveries: [{ ...clash, notification: { ...clash.notification, id: idsOf(keyed)[0] ?? "" } }] },
    ];
    await t.throwsAsync(f.jobs.insertBatch(refused));
    const retried = deliveries(subscription, 1);
    t.deepEqual(
      await insertOnce(f.jobs, f.clientId, "later", retried),
      { ids: idsOf(retried), duplicate: false },
      "the refused batch's key is free",
    );
  });

  testOn(test, target)(
    `${name}: a lock takes due jobs oldest first and says whether its window was full; counts say what waits`,
    async (t) => {
      const f = await Fixture.open(t, target);
      const subscription = await f.subscribe();
      await f.jobs.insert(deliveries(subscription, 12));
      const all = (await f.jobs.lockDue(request(12))).jobs;
      t.is(all.length, 12);
      t.like(await f.jobs.counts(), { due: 0, scheduled: 0, locked: 12, oldestDueAt: null });
      // Due one to eleven minutes ago, in an order unrelated to their ids'; the last not for an hour.
      const now = Date.now();
      const dueAt = all.slice(0, 11).map((job, i) => ({ job, at: new Date(now - (((i * 5) % 11) + 1) * 60_000) }));
      for (const { job, at } of dueAt) t.true(await f.jobs.reschedule(held(job), at));
      const later = all[11] as LockedJob;
      t.true(await f.jobs.reschedule(held(later), new Date(now + 3_600_000)));
      const oldestFirst = [...dueAt].sort((x, y) => x.at.getTime() - y.at.getTime()).map(({ job }) => job.id);
      t.deepEqual(await f.jobs.counts(), { due: 11, scheduled: 1, locked: 0, oldestDueAt: new Date(now - 11 * 60_000) });

      const first = await f.jobs.lockDue(request(3));
      t.deepEqual(idsOf(first.jobs), oldestFirst.slice(0, 3));
      t.false(first.drained, "its window was full: more may be due");
      t.deepEqual(first.passedOver, { endpoints: [], clients: [] });
      const rest = await f.jobs.lockDue(request(100));
      t.deepEqual(idsOf(rest.jobs), oldestFirst.slice(3), "oldest due first; not the one due later");
      t.true(rest.drained, "nothing else was due");
      t.deepEqual(await f.jobs.counts(), { due: 0, scheduled: 1, locked: 11, oldestDueAt: null });
      t.deepEqual((await f.jobs.lockDue(request(100))).jobs, []);
    },
  );

  testOn(test, target)(
    `${name}: a lock keeps to each endpoint's and client's budget, leaves those with none unread, and names those passed over`,
    async (t) => {
      const f = await Fixture.open(t, target);
      const subscription = await f.subscribe();
      const other = (await f.store.clients.ensureWithKey("other", newId("cli"))).id;
      const theirSubscription = await f.subscribe(other);
      const hung = `${f.clientId} https://hung.example`;
      const fine = `${f.clientId} https://fine.example`;
      const theirs = endpointOf(other, theirSubscription.url);
      // Inserted a little apart: the hung endpoint's jobs are the oldest due.
      await f.jobs.insert(deliveries(subscription, 30, hung));
      await sleep(5);
      await f.jobs.insert(deliveries(subscription, 5, fine));
      await sleep(5);
      await f.jobs.insert(deliveries(theirSubscription, 5));

      const fair = await f.jobs.lockDue(request(100, { endpointBudgets: new Map([[hung, 0]]), defaultPerEndpoint: 3 }));
      t.deepEqual(perEndpoint(fair.jobs), { [fine]: 3, [theirs]: 3 }, "three of each other endpoint, none of the hung one");
      t.true(fair.drained, "nothing else it could take was due");
      t.deepEqual(sorted(fair.passedOver.endpoints), sorted([fine, theirs]), "the hung endpoint's jobs were not even read");
      t.deepEqual(fair.passedOver.clients, []);

      const capped = await f.jobs.lockDue(request(100, { clientBudgets: new Map([[f.clientId, 4]]), defaultPerClient: 100 }));
      t.deepEqual(perEndpoint(capped.jobs), { [hung]: 4, [theirs]: 2 }, "the client's budget across its endpoints, oldest first");
      t.deepEqual(capped.passedOver, { endpoints: [], clients: [f.clientId] });

      const none = await f.jobs.lockDue(request(100, { clientBudgets: new Map([[f.clientId, 0]]) }));
      t.deepEqual(none.jobs, [], "a client with no budget: its jobs stay where they are");
      t.deepEqual(none.passedOver, { endpoints: [], clients: [] }, "and are not read");
      t.true(none.drained);
    },
  );

  testOn(test, target)(`${name}: a client's budget counts only what its endpoints' budgets let through`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe();
    const slow = `${f.clientId} https://slow.example`;
    const fast = `${f.clientId} https://fast.example`;
    await f.jobs.insert(deliveries(subscription, 30, slow));
    await sleep(5);
    await f.jobs.insert(deliveries(subscription, 10, fast));
    // The slow endpoint's older rows come first; its budget of 3 must not use up the client's 20.
    const batch = await f.jobs.lockDue(
      request(100, { endpointBudgets: new Map([[slow, 3]]), clientBudgets: new Map([[f.clientId, 20]]), defaultPerEndpoint: 100 }),
    );
    t.deepEqual(perEndpoint(batch.jobs), { [slow]: 3, [fast]: 10 }, "every job of the other endpoint, within the client's 20");
    t.deepEqual(batch.passedOver, { endpoints: [slow], clients: [] }, "the slow endpoint's budget left jobs due");
  });

  testOn(test, target)(
    `${name}: two instances locking at once never take the same job; a dead holder's locks are taken over`,
    async (t) => {
      const f = await Fixture.open(t, target, 60_000);
      const second = f.instance("instance-2");
      // A third instance that presumes a holder dead after a second.
      const impatient = f.instance("instance-3", 1_000);
      const subscription = await f.subscribe();
      await f.jobs.insert(deliveries(subscription, 40));
      const locked: LockedJob[] = [];
      // Rows one statement reads but leaves are skipped by the other until it ends: lock until all are held.
      for (let round = 0; round < 10 && locked.length < 40; round++) {
        const [a, b] = await Promise.all([f.jobs.lockDue(request(25)), second.lockDue(request(25))]);
        locked.push(...a.jobs, ...b.jobs);
      }
      t.is(new Set(idsOf(locked)).size, locked.length, "no job twice");
      t.is(locked.length, 40);
      t.deepEqual((await f.jobs.lockDue(request(10))).jobs, [], "all held");

      // Past its lock lifetime, a lock is presumed dead and its job taken, with what its attempt reads.
      await sleep(1_100);
      const taken = await impatient.lockDue(request(100));
      t.deepEqual(sorted(idsOf(taken.jobs)), sorted(idsOf(locked)), "every expired lock");
      t.true(taken.jobs.every((job) => job.read?.notification.id === job.id && job.read.subscription?.id === subscription.id));
      const before = new Map(locked.map((job) => [job.id, job]));
      for (const job of taken.jobs) {
        t.true(await holds(impatient, held(job)));
        t.false(await holds(f.jobs, held(before.get(job.id) as LockedJob)), "the dead holder's lock is gone");
      }
    },
  );

  testOn(test, target)(`${name}: expired locks of an endpoint with no budget are left for later, not in the way of others'`, async (t) => {
    const f = await Fixture.open(t, target, 60_000);
    const impatient = f.instance("instance-2", 1_000);
    const subscription = await f.subscribe();
    const hung = `${f.clientId} https://hung.example`;
    const other = `${f.clientId} https://other.example`;
    await f.jobs.insert(deliveries(subscription, 20, hung));
    await f.jobs.insert(deliveries(subscription, 5, other));
    t.is((await f.jobs.lockDue(request(25))).jobs.length, 25);
    await sleep(1_100);
    // The hung endpoint's expired locks come first and would fill a window of 5.
    const taken = await impatient.lockDue(request(5, { endpointBudgets: new Map([[hung, 0]]) }));
    t.deepEqual(
      taken.jobs.map((job) => job.endpoint),
      Array(5).fill(other),
    );
  });

  testOn(test, target)(
    `${name}: a lock hands each job out with its notification and subscription, or none once it is deleted`,
    async (t) => {
      const f = await Fixture.open(t, target);
      // Every optional field, so that the read is seen to bring the whole subscription.
      const kept = await f.subscribe(f.clientId, {
        description: "kept",
        signatureScheme: "STANDARD_WEBHOOKS",
        failingSince: new Date(Date.UTC(2026, 0, 1, 0, 0, 3)),
        nextPublicKeyPem: "next-public",
        nextPrivateKeyPem: "next-private",
        rotationDeadline: new Date(Date.UTC(2026, 0, 1, 0, 0, 9)),
      });
      const deleted = await f.subscribe(f.clientId, { url: "https://other.example/hook" });
      const toKept = deliveries(kept, 3);
      const [toDeleted] = deliveries(deleted, 1) as [NewDelivery];
      await f.jobs.insert([...toKept, toDeleted]);
      // Deleted after its notification was accepted: an attempt of it must still be able to end it.
      t.true(await f.store.subscriptions.delete(deleted.id));
      const locked = new Map((await f.jobs.lockDue(request(10))).jobs.map((job) => [job.id, job]));
      for (const delivery of toKept)
        t.deepEqual(locked.get(delivery.notification.id)?.read, { notification: delivery.notification, subscription: kept });
      const orphan = locked.get(toDeleted.notification.id)?.read;
      t.is(orphan?.notification.id, toDeleted.notification.id, "a notification outlives its subscription");
      t.is(orphan?.subscription, undefined, "a deleted subscription reads as none");
    },
  );

  testOn(test, target)(
    `${name}: finish records the attempt and the final status, and deletes the job only under the held lock`,
    async (t) => {
      const f = await Fixture.open(t, target, 60_000);
      const subscription = await f.subscribe();
      await f.jobs.insert(deliveries(subscription, 2));
      const [delivered, lost] = (await f.jobs.lockDue(request(2))).jobs as [LockedJob, LockedJob];

      t.true(await f.jobs.finish({ ...held(delivered), attempt: attemptOf(delivered.id, 200), status: "delivered" }));
      t.like(await f.store.notifications.get(delivered.id), { status: "delivered", attemptCount: 1 });
      t.like(await f.store.notifications.listAttempts(delivered.id), [{ attempt: 0, statusCode: 200, succeeded: true }]);
      t.false(await holds(f.jobs, held(delivered)), "its job is gone");
      t.like(await f.jobs.counts(), { due: 0, scheduled: 0, locked: 1 });

      // Another instance presumes this one dead and takes the other job over while its run goes on.
      await sleep(1_100);
      const successor = f.instance("instance-2", 1_000);
      const [takenOver] = (await successor.lockDue(request(10))).jobs;
      t.is(takenOver?.id, lost.id);
      t.false(await f.jobs.finish({ ...held(lost), attempt: attemptOf(lost.id, 410), status: "failed" }), "a run that lost its lock");
      t.true(await holds(successor, held(takenOver as LockedJob)), "leaves the job to its new holder");
      t.like(await f.store.notifications.get(lost.id), { status: "failed", attemptCount: 1 }, "and still records its attempt");
      t.like(await f.store.notifications.listAttempts(lost.id), [{ attempt: 0, statusCode: 410, succeeded: false }]);
      t.like(await f.jobs.counts(), { due: 0, scheduled: 0, locked: 1 });
    },
  );

  testOn(test, target)(
    `${name}: retry records the failed attempt and schedules the next run, releasing the lock, only under the held lock`,
    async (t) => {
      const f = await Fixture.open(t, target);
      const subscription = await f.subscribe();
      await f.jobs.insert(deliveries(subscription, 2));
      const [retried, lost] = (await f.jobs.lockDue(request(2))).jobs as [LockedJob, LockedJob];
      const nextRunAt = new Date(Date.now() + 60_000);
      t.true(await f.jobs.retry({ ...held(retried), attempt: attemptOf(retried.id, 503), nextRunAt }));
      t.false(await f.jobs.retry({ ...stale(lost), attempt: attemptOf(lost.id, 503), nextRunAt }), "a run that lost its lock");

      t.false(await holds(f.jobs, held(retried)), "its lock is released");
      t.false(await f.jobs.reschedule(held(retried), new Date()), "so nothing more is written under it");
      t.like(await f.store.notifications.get(retried.id), { status: "pending", attemptCount: 1 });
      t.like(await f.store.notifications.listAttempts(retried.id), [{ attempt: 0, statusCode: 503, succeeded: false }]);
      t.like(await f.jobs.counts(), { due: 0, scheduled: 1, locked: 1 }, "the retry waits for its time");
      t.deepEqual((await f.jobs.lockDue(request(10))).jobs, [], "and is not due before it");

      t.true(await holds(f.jobs, held(lost)), "a run that lost its lock leaves the job to its holder");
      t.like(await f.store.notifications.get(lost.id), { status: "pending", attemptCount: 1 }, "and still records its attempt");
      t.is((await f.store.notifications.listAttempts(lost.id)).length, 1);
    },
  );

  testOn(test, target)(`${name}: unlock, reschedule, renew and remove act only while the job still has the lock they name`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe();
    await f.jobs.insert(deliveries(subscription, 4));
    const [first, second, third, fourth] = (await f.jobs.lockDue(request(4))).jobs as [LockedJob, LockedJob, LockedJob, LockedJob];

    await f.jobs.unlock([held(first), stale(second)]);
    t.false(await holds(f.jobs, held(first)), "handed back");
    t.true(await holds(f.jobs, held(second)), "a lock taken since is kept");
    const [again] = (await f.jobs.lockDue(request(4))).jobs;
    t.is(again?.id, first.id, "a job handed back is due again, as it was scheduled");

    const retryAt = new Date(Date.now() + 60_000);
    t.false(await f.jobs.reschedule(stale(third), retryAt), "not under a lock it lost");
    t.true(await holds(f.jobs, held(third)));
    t.true(await f.jobs.reschedule(held(third), retryAt));
    t.false(await holds(f.jobs, held(third)), "rescheduled: its lock is released");
    t.false(await f.jobs.reschedule(held(third), retryAt), "written once");
    t.like(await f.jobs.counts(), { due: 0, scheduled: 1, locked: 3 });

    // A run renews its lock (Agenda's touch); the renewal moves the lock alone.
    const renewed: HeldJob = { id: fourth.id, heldLock: new Date(fourth.lockedAt.getTime() + 1000) };
    t.false(await f.jobs.renew(stale(fourth), renewed.heldLock), "not a lock it lost");
    t.true(await f.jobs.renew(held(fourth), renewed.heldLock));
    t.false(await holds(f.jobs, held(fourth)), "the lock it renewed away from is gone");
    t.false(await f.jobs.remove(held(fourth)), "and writes nothing");
    await f.jobs.unlock([renewed]);
    const [relocked] = (await f.jobs.lockDue(request(4))).jobs;
    t.is(relocked?.id, fourth.id, "handed back under its renewed lock, it is due as scheduled");

    t.false(await f.jobs.remove(renewed), "not under a lock it handed back");
    t.true(await f.jobs.remove(held(relocked as LockedJob)));
    t.false(await f.jobs.remove(held(relocked as LockedJob)), "removed once");
    t.false(await f.jobs.reschedule(held(relocked as LockedJob), new Date()), "a removed job is not scheduled again");
    t.like(await f.store.notifications.get(fourth.id), { id: fourth.id, status: "pending" }, "its notification stays");
    t.like(await f.jobs.counts(), { due: 0, scheduled: 1, locked: 2 });
  });

  // Two runs of one job under different locks (an instance took back its own expired job while the old run
  // went on) can share a statement: only the one holding the lock is told it wrote.
  testOn(test, target)(`${name}: of two runs of one job writing together, only the one holding its lock is told it wrote`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe();
    await f.jobs.insert(deliveries(subscription, 2));
    const [retried, removed] = (await f.jobs.lockDue(request(2))).jobs as [LockedJob, LockedJob];
    const retry = (job: HeldJob) => f.jobs.retry({ ...job, attempt: attemptOf(job.id, 503), nextRunAt: new Date(Date.now() + 60_000) });
    t.deepEqual(await Promise.all([retry(stale(retried, 60_000)), retry(held(retried))]), [false, true]);
    t.deepEqual(await Promise.all([f.jobs.remove(stale(removed, 60_000)), f.jobs.remove(held(removed))]), [false, true]);
    t.like(await f.jobs.counts(), { due: 0, scheduled: 1, locked: 0 });
  });

  testOn(test, target)(`${name}: prepare gives a job to every pending notification an older version left without one`, async (t) => {
    const f = await Fixture.open(t, target);
    const subscription = await f.subscribe(f.clientId, { url: "HTTPS://Receiver.Example:8443/hook?x=1" });
    const [pastRetry, futureRetry, unscheduled, unqueued, done] = deliveries(subscription, 5).map((d) => d.notification) as [
      Notification,
      Notification,
      Notification,
      Notification,
      Notification,
    ];
    const now = Date.now();
    const pastAt = new Date(now - 600_000);
    await leaveOlderVersionState(f.database, {
      // Notifications it queued in its own job table, with their jobs' schedules (one it left with none).
      queued: [
        { notification: pastRetry, nextRunAt: pastAt },
        { notification: futureRetry, nextRunAt: new Date(now + 600_000) },
        { notification: unscheduled, nextRunAt: null },
      ],
      // One it accepted but never queued (a crash between the two), and one it delivered.
      unqueued: [unqueued],
      ended: [{ ...done, status: "delivered", attemptCount: 1 }],
    });
    const upgraded = f.instance("upgraded");
    await upgraded.prepare();
    await upgraded.prepare(); // and again at the next start: nothing twice
    t.deepEqual(await upgraded.counts(), { due: 3, scheduled: 1, locked: 0, oldestDueAt: pastAt }, "a scheduled retry stays scheduled");
    const locked = (await upgraded.lockDue(request(10))).jobs;
    t.is(locked[0]?.id, pastRetry.id, "an old retry keeps its turn");
    t.deepEqual(
      sorted(idsOf(locked)),
      sorted([pastRetry.id, unscheduled.id, unqueued.id]),
      "one never queued or never scheduled is due now",
    );
    for (const job of locked) {
      t.is(job.endpoint, `${f.clientId} https://receiver.example:8443`, "its endpoint read from its subscription's URL");
      t.is(job.read?.subscription?.id, subscription.id);
    }
    t.is(await olderVersionJobsLeft(f.database), 0, "the older version's jobs are gone");
  });
}

// A store that can't run here is reported as skipped, by the variable that enables it.
if (!process.env.POSTGRES_URL) test.skip("postgres: set POSTGRES_URL to run the job store contract against PostgreSQL", () => {});
if (!process.env.MONGODB_URL) test.skip("mongodb: set MONGODB_URL to run the job store contract against MongoDB", () => {});

/** What an older version left: notifications with a job in its own job table (Agenda's), never queued, and ended. */
interface OlderVersionState {
  queued: Array<{ notification: Notification; nextRunAt: Date | null }>;
  unqueued: Notification[];
  ended: Notification[];
}

/** Writes `state` as an older version did, straight to the database, with no job of this version's. */
async function leaveOlderVersionState(database: Database, state: OlderVersionState): Promise<void> {
  const stored = [
    ...state.queued.map(({ notification }) => ({ notification, scheduled: true })),
    ...state.unqueued.map((notification) => ({ notification, scheduled: false })),
    ...state.ended.map((notification) => ({ notification, scheduled: true })),
  ];
  if (database.kind === "mongodb") {
    await collections(database.db).notifications.insertMany(
      stored.map(({ notification, scheduled }) => ({ ...toNotificationDoc(notification), scheduled })),
    );
    await database.db.collection("wh_agenda_jobs").insertMany(
      state.queued.map(({ notification, nextRunAt }) => ({
        name: "deliver-notification",
        data: { notificationId: notification.id },
        nextRunAt,
        failCount: 2,
      })),
    );
    return;
  }
  for (const { notification: n, scheduled } of stored) {
    await database.api.query(
      `INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, scheduled, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [n.id, n.subscriptionId, n.clientId, n.event, n.body, n.status, n.attemptCount, scheduled, n.createdAt, n.updatedAt],
    );
  }
  await database.api.query(
    `CREATE TABLE agenda_jobs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL, next_run_at timestamptz,
     fail_count int, data jsonb)`,
  );
  for (const { notification, nextRunAt } of state.queued) {
    await database.api.query("INSERT INTO agenda_jobs (name, next_run_at, fail_count, data) VALUES ('deliver-notification', $1, 2, $2)", [
      nextRunAt,
      { notificationId: notification.id },
    ]);
  }
}

/** How many delivery jobs remain in the older version's job table. */
async function olderVersionJobsLeft(database: Database): Promise<number> {
  if (database.kind === "mongodb") return database.db.collection("wh_agenda_jobs").countDocuments({ name: "deliver-notification" });
  const { rows } = await database.api.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'deliver-notification'",
  );
  return rows[0]?.n ?? 0;
}
