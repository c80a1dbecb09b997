import type { JobParameters } from "agenda";
import test, { type ExecutionContext } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { AgendaJobs, DELIVER_JOB } from "../../src/delivery/agenda-jobs.js";
import type { JobFeed } from "../../src/delivery/job-feed.js";
import type { JobStore, LockedJob } from "../../src/delivery/job-store.js";
import { newId } from "../../src/domain/ids.js";
import { openJobs } from "../../src/store/open-jobs.js";
import { openStore } from "../../src/store/open-store.js";
import type { SqlPool } from "../../src/store/postgres/sql-pool.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { notOnMongo, storeTargets, testOn } from "../helpers/stores.js";
import { notificationRecord, subscriptionRecord } from "../helpers/subscriptions.js";

/**
 * Agenda's repository of delivery jobs, driven as Agenda's Job.run drives
 * it (hand out, save as the run starts, renew the lock, save at the end),
 * against a real store whose statements take a network's time.
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

const attemptOf = (id: string, statusCode: number) => ({
  notificationId: id,
  attempt: 0,
  startedAt: new Date(),
  durationMs: 3,
  statusCode,
  succeeded: statusCode < 300,
});

/** One job locked and handed to Agenda's run, which has saved it as it starts. */
async function oneRun(t: ExecutionContext, target: ReturnType<typeof storeTargets>[number], wrap?: (store: JobStore) => JobStore) {
  const created = await target.create();
  const opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...created.env }).store, log);
  t.teardown(async () => {
    await opened.close();
    await created.cleanup();
  });
  if (opened.database.kind !== "postgres") throw new Error("a SQL target");
  const stored = openJobs(
    { ...opened.database, bookkeeping: distant(opened.database.bookkeeping) },
    {
      owner: "instance-1",
      lockLifetimeMs: 30_000,
    },
  ).jobs;
  await stored.prepare();
  const jobs = wrap ? wrap(stored) : stored;
  const client = await opened.store.clients.ensureWithKey("jobs", newId("cli"));
  const at = new Date();
  const subscription = subscriptionRecord(client.id, { createdAt: at, updatedAt: at });
  await opened.store.subscriptions.insert(subscription);
  const notification = notificationRecord({ id: newId("ntf"), subscriptionId: subscription.id, clientId: client.id, createdAt: at });
  await jobs.insert([{ notification, endpoint: "e" }]);
  const request = { limit: 1, endpointBudgets: new Map(), clientBudgets: new Map(), defaultPerEndpoint: 1, defaultPerClient: 1 };
  const [job] = (await jobs.lockDue(request)).jobs as [LockedJob];
  const toHandOut = [job];
  const putBack: LockedJob[] = [];
  const feed = { take: () => toHandOut.shift(), putBack: (back: LockedJob) => putBack.push(back) };
  const repository = new AgendaJobs(feed as unknown as JobFeed, jobs);
  const attrs = (await repository.getNextJobToRun(DELIVER_JOB)) as JobParameters;
  await repository.saveJobState(attrs);
  return { jobs, repository, attrs, job, putBack, opened };
}

/** Agenda's touch: the lock moves forward in memory, then is saved. */
function touch(repository: AgendaJobs, attrs: JobParameters): Promise<unknown> {
  attrs.lockedAt = new Date(Date.now() + 1);
  return repository.saveJobState(attrs).catch((error: unknown) => error);
}

notOnMongo(test, "Agenda's repository with a renewal in flight");
for (const target of storeTargets().filter((t) => t.name !== "mongodb")) {
  testOn(test, target)(`${target.name}: a renewal moves the lock: the run's end is written under the new one, not the old`, async (t) => {
    const { jobs, repository, attrs, job } = await oneRun(t, target);
    t.is(await touch(repository, attrs), undefined);
    const lease = repository.leaseOf(attrs);
    t.is(lease?.heldLock.getTime(), attrs.lockedAt?.getTime(), "the lease holds the renewed lock");
    t.false(await jobs.remove({ id: job.id, heldLock: job.lockedAt }), "the old lock writes nothing");
    t.is((await jobs.counts()).locked, 1, "still locked, by the run");
  });

  for (const ending of ["a retry", "delivered"] as const) {
    testOn(test, target)(`${target.name}: the run's end (${ending}) waits for a renewal in flight and uses the renewed lock`, async (t) => {
      const { jobs, repository, attrs, job, opened } = await oneRun(t, target);
      const lease = repository.leaseOf(attrs);
      if (!lease) return t.fail("a lease");
      const renewal = touch(repository, attrs);
      // The attempt ends while the renewal's statement is on its way.
      const written = await lease.write((held) =>
        ending === "delivered"
          ? jobs.finish({ ...held, attempt: attemptOf(job.id, 200), status: "delivered" })
          : jobs.retry({ ...held, attempt: attemptOf(job.id, 503), nextRunAt: new Date(Date.now() + 60_000) }),
      );
      lease.ended = true;
      t.is(await renewal, undefined);
      t.true(written, "written under the renewed lock");
      const counts = await jobs.counts();
      t.like(counts, ending === "delivered" ? { locked: 0, scheduled: 0, due: 0 } : { locked: 0, scheduled: 1 });
      t.like(await opened.store.notifications.get(job.id), { status: ending === "delivered" ? "delivered" : "pending", attemptCount: 1 });
      // As Agenda as the run ends: its save has nothing left to write.
      attrs.lockedAt = undefined;
      await repository.saveJobState(attrs);
      t.deepEqual(await jobs.counts(), counts);
    });
  }

  testOn(test, target)(`${target.name}: a renewal after the run wrote its end has no lock to move`, async (t) => {
    let renewals = 0;
    const { jobs, repository, attrs, job } = await oneRun(t, target, (store) => {
      const renew = store.renew.bind(store);
      store.renew = (...args) => {
        renewals++;
        return renew(...args);
      };
      return store;
    });
    const lease = repository.leaseOf(attrs);
    if (!lease) return t.fail("a lease");
    await lease.write((held) => jobs.finish({ ...held, attempt: attemptOf(job.id, 200), status: "delivered" }));
    lease.ended = true;
    t.is(await touch(repository, attrs), undefined);
    t.is(renewals, 0);
  });

  testOn(test, target)(`${target.name}: a save of a job this instance does not hold is refused`, async (t) => {
    const { repository, attrs } = await oneRun(t, target);
    await t.throwsAsync(repository.saveJobState({ ...attrs, _id: "ntf_other" as never, lockedAt: new Date(0) }), {
      message: /does not hold/,
    });
    t.is(await repository.getNextJobToRun(DELIVER_JOB), undefined, "nothing more to hand out");
  });
}
