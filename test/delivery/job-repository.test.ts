import type { JobParameters } from "agenda";
import test, { type ExecutionContext } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { createJobStore } from "../../src/delivery/agenda/create-delivery-engine.js";
import { DELIVER_JOB, DeliveryJobRepository } from "../../src/delivery/agenda/delivery-job-repository.js";
import type { DeliveryJobStore, LockedJob } from "../../src/delivery/agenda/delivery-job-store.js";
import type { JobFeed } from "../../src/delivery/job-feed.js";
import { newId } from "../../src/domain/ids.js";
import type { Notification } from "../../src/domain/model.js";
import { openStore } from "../../src/store/open-store.js";
import type { SqlPool } from "../../src/store/postgres/sql-pool.js";
import { countCalls } from "../helpers/count-calls.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

/**
 * Agenda's repository of delivery jobs, driven as Agenda's Job.run drives
 * it (hand out, clear the schedule and save, renew the lock, save at the
 * end), against a real store whose statements take a network's time.
 */
const log = pino({ level: "silent" });
const ROUND_TRIP_MS = 20;

/** A pool whose every statement takes a round trip first, as a networked PostgreSQL's does. */
function distant(pool: SqlPool): SqlPool {
  const delay = () => new Promise((resolve) => setTimeout(resolve, ROUND_TRIP_MS));
  return {
    query: (async (...args: Parameters<SqlPool["query"]>) => {
      await delay();
      return pool.query(...args);
    }) as SqlPool["query"],
    connect: () => pool.connect(),
  };
}

async function oneRun(
  t: ExecutionContext,
  target: ReturnType<typeof storeTargets>[number],
  wrap?: (store: DeliveryJobStore) => DeliveryJobStore,
) {
  const created = await target.create();
  const opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...created.env }).store, log);
  t.teardown(async () => {
    await opened.close();
    await created.cleanup();
  });
  if (opened.database.kind !== "postgres") throw new Error("a SQL target");
  const database = { ...opened.database, bookkeeping: distant(opened.database.bookkeeping) };
  const stored = createJobStore(database, { owner: "instance-1", lockLifetimeMs: 30_000 });
  await stored.prepare();
  const jobs = wrap ? wrap(stored) : stored;
  const client = await opened.store.clients.ensureWithKey("jobs", newId("cli"));
  const at = new Date();
  const subscription = subscriptionRecord(client.id, { createdAt: at, updatedAt: at });
  await opened.store.subscriptions.insert(subscription);
  const notification: Notification = {
    id: newId("ntf"),
    subscriptionId: subscription.id,
    clientId: client.id,
    event: "Order.Created",
    body: "{}",
    status: "pending",
    attemptCount: 0,
    createdAt: at,
    updatedAt: at,
  };
  await jobs.insert([{ notification, endpoint: "e" }], () => [false]);
  const request = { limit: 1, endpointBudgets: new Map(), clientBudgets: new Map(), defaultPerEndpoint: 1, defaultPerClient: 1 };
  const [job] = (await jobs.lockDue(request)).jobs as [LockedJob];
  const toHandOut = [job];
  const due: Date[] = [];
  const feed = { take: () => toHandOut.shift(), putBack() {}, finish() {}, dueAt: (at: Date) => due.push(at) };
  const repository = new DeliveryJobRepository(jobs, feed as unknown as JobFeed<LockedJob>, () => {});
  const attrs = (await repository.getNextJobToRun(DELIVER_JOB)) as JobParameters;
  // As Job.run: the schedule is cleared while the run is under way, and saved so.
  attrs.lastRunAt = new Date();
  attrs.nextRunAt = null;
  await repository.saveJobState(attrs);
  return { jobs, repository, attrs, job, due };
}

/** Agenda's touch: the lock moves forward in memory, then is saved. */
function touch(repository: DeliveryJobRepository, attrs: JobParameters): Promise<unknown> {
  attrs.lockedAt = new Date(Date.now() + 1);
  return repository.saveJobState(attrs).catch((error: unknown) => error);
}

for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  testOn(test, target)(
    `${target.name}: a renewal moves the lock alone; the schedule stays, for whoever takes the job over after a crash`,
    async (t) => {
      const { jobs, repository, attrs, job } = await oneRun(t, target);
      const scheduled = (await jobs.get(job.id))?.nextRunAt?.getTime();
      t.is(await touch(repository, attrs), undefined);
      const stored = await jobs.get(job.id);
      t.is(stored?.lockedAt?.getTime(), attrs.lockedAt?.getTime(), "renewed");
      t.is(stored?.nextRunAt?.getTime(), scheduled, "still due when its lock expires");
    },
  );

  for (const ending of ["a retry", "delivered"] as const) {
    testOn(test, target)(
      `${target.name}: the save ending a run (${ending}) waits for a renewal in flight and uses the renewed lock`,
      async (t) => {
        const { jobs, repository, attrs, job, due } = await oneRun(t, target);
        const renewal = touch(repository, attrs);
        // The attempt ends while the renewal's statement is on its way.
        attrs.lockedAt = undefined;
        attrs.lastFinishedAt = new Date();
        const retryAt = new Date(Date.now() + 60_000);
        attrs.nextRunAt = ending === "a retry" ? retryAt : null;
        await repository.saveJobState(attrs);
        t.is(await renewal, undefined);
        const stored = await jobs.get(job.id);
        if (ending === "delivered") {
          t.is(stored, undefined, "deleted");
          t.is(await repository.removeJobs({ id: job.id }), 1, "Agenda's delete that follows answers from memory");
        } else {
          t.is(stored?.lockedAt, undefined, "released");
          t.is(stored?.nextRunAt?.getTime(), retryAt.getTime(), "the retry is scheduled");
          t.deepEqual(due, [retryAt], "and the feed told when it falls due");
        }
      },
    );
  }

  testOn(test, target)(
    `${target.name}: a run's last record deletes its job under the renewed lock; the save ending the run then writes nothing`,
    async (t) => {
      let removes = { calls: 0 };
      const { jobs, repository, attrs, job } = await oneRun(t, target, (store) => {
        removes = countCalls(store, "remove");
        return store;
      });
      const renewal = touch(repository, attrs);
      const attempt = { notificationId: job.id, attempt: 0, startedAt: new Date(), durationMs: 3, statusCode: 200, succeeded: true };
      // Recorded while the renewal's statement is on its way: it goes out after it, under the lock it left.
      await repository.finishRun(attrs, async (heldLock) => (await jobs.finish([{ attempt, status: "delivered", heldLock }]))[0] === true);
      t.is(await renewal, undefined);
      t.is(await jobs.get(job.id), undefined, "the record deleted the job");
      attrs.lockedAt = undefined;
      attrs.lastFinishedAt = new Date();
      await repository.saveJobState(attrs);
      t.is(removes.calls, 0, "Agenda's save as the run ends sends no delete");
      t.is(await repository.removeJobs({ id: job.id }), 1, "and its delete that follows answers from memory");
    },
  );

  testOn(test, target)(
    `${target.name}: a run's failed attempt saves its retry under the renewed lock; Agenda's backoff and save that follow write nothing`,
    async (t) => {
      let saves = { calls: 0 };
      let renewals = { calls: 0 };
      const { jobs, repository, attrs, job, due } = await oneRun(t, target, (store) => {
        saves = countCalls(store, "save");
        renewals = countCalls(store, "renew");
        return store;
      });
      const renewal = touch(repository, attrs);
      const attempt = { notificationId: job.id, attempt: 0, startedAt: new Date(), durationMs: 3, statusCode: 503, succeeded: false };
      const nextRunAt = new Date(Date.now() + 60_000);
      // Recorded while the renewal's statement is on its way: it goes out after it, under the lock it left.
      await repository.retryRun(
        attrs,
        { nextRunAt, reason: "receiver answered 503" },
        async (state) => (await jobs.retry([{ attempt, state }]))[0] === true,
      );
      t.is(await renewal, undefined);
      const stored = await jobs.get(job.id);
      t.is(stored?.lockedAt, undefined, "released");
      t.is(stored?.nextRunAt?.getTime(), nextRunAt.getTime(), "the retry is scheduled");
      t.like(stored, { failCount: 1, failReason: "receiver answered 503" });
      t.deepEqual(due, [nextRunAt], "and the feed told when it falls due");
      t.is(await touch(repository, attrs), undefined);
      t.is(renewals.calls, 1, "a renewal after the retry is saved has no lock to move: it writes nothing");
      // As Agenda after the run threw: its own backoff, a failure counted, and the save.
      attrs.lockedAt = undefined;
      attrs.lastFinishedAt = new Date();
      attrs.failCount = 1;
      attrs.nextRunAt = new Date(Date.now() + 5_000);
      await repository.saveJobState(attrs);
      t.is(saves.calls, 0, "Agenda's save as the run ends writes nothing");
      t.is((await jobs.get(job.id))?.nextRunAt?.getTime(), nextRunAt.getTime(), "the retry stays as the record scheduled it");
    },
  );

  testOn(test, target)(`${target.name}: a renewal that fails leaves the run under its old lock, in Agenda's memory too`, async (t) => {
    let refuse = true;
    const { jobs, repository, attrs, job } = await oneRun(t, target, (store) => {
      const renew = store.renew.bind(store);
      store.renew = (renewals) => (refuse ? Promise.reject(new Error("the store is unreachable")) : renew(renewals));
      return store;
    });
    const held = job.lockedAt.getTime();
    const error = await touch(repository, attrs);
    t.regex(String(error), /unreachable/);
    t.is(attrs.lockedAt?.getTime(), held, "Agenda sees the lock the run still holds");
    refuse = false;
    attrs.lockedAt = undefined;
    attrs.nextRunAt = null;
    await repository.saveJobState(attrs);
    t.is(await jobs.get(job.id), undefined, "the run ends under the lock it held");
  });
}
