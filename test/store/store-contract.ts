import { setTimeout as sleep } from "node:timers/promises";
import type { TestFn } from "ava";
import type { JobStore, LockedJob } from "../../src/delivery/job-store.js";
import { endpointOf } from "../../src/domain/endpoint.js";
import { newId } from "../../src/domain/ids.js";
import { type DeliveryAttempt, type Notification, SUBSCRIPTION_DELETED, type Subscription } from "../../src/domain/model.js";
import type { Store } from "../../src/domain/ports.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

/**
 * The storage port's contract, written once and run against every adapter
 * (test/store/store.test.ts), as Agenda runs one suite against each backend.
 * Notifications and their attempts come to exist the one way the service
 * makes them: through the delivery job store on the same database
 * (test/store/job-store.test.ts holds its own contract).
 */
export interface ContractStore extends Store {
  jobs: JobStore;
}

/** Stores notifications as the delivery engine accepts them, each with a job due now. */
export async function accept(jobs: JobStore, notifications: readonly Notification[]): Promise<void> {
  await jobs.insert(
    notifications.map((notification) => ({ notification, endpoint: endpointOf(notification.clientId, "https://example.com/") })),
  );
}

/**
 * Locks the jobs of these notifications, as a delivery does before its
 * attempts. The contract's tests share one store, so a lock may take other
 * tests' jobs (and theirs ours): those are handed back at once, and the
 * lock is tried again until it holds all of ours.
 */
async function lockJobs(jobs: JobStore, ids: readonly string[]): Promise<LockedJob[]> {
  const wanted = new Set(ids);
  const held = new Map<string, LockedJob>();
  for (let round = 0; held.size < wanted.size; round++) {
    if (round > 0) await sleep(10);
    if (round === 200) throw new Error(`locked ${held.size} of ${wanted.size} jobs`);
    const { jobs: locked } = await jobs.lockDue({
      limit: 1000,
      endpointBudgets: new Map(),
      clientBudgets: new Map(),
      defaultPerEndpoint: 1000,
      defaultPerClient: 1000,
    });
    await jobs.unlock(locked.filter((job) => !wanted.has(job.id)).map((job) => ({ id: job.id, heldLock: job.lockedAt })));
    for (const job of locked) if (wanted.has(job.id)) held.set(job.id, job);
  }
  return ids.map((id) => held.get(id) as LockedJob);
}

/** Records an attempt as a delivery does: the notification's job locked, then retried (due again at once) or finished. */
export async function recordThroughJob(jobs: JobStore, attempt: DeliveryAttempt, status: Notification["status"]): Promise<void> {
  const [job] = (await lockJobs(jobs, [attempt.notificationId])) as [LockedJob];
  const heldJob = { id: job.id, heldLock: job.lockedAt };
  const written =
    status === "pending"
      ? await jobs.retry({ ...heldJob, attempt, nextRunAt: new Date() })
      : await jobs.finish({ ...heldJob, attempt, status });
  if (!written) throw new Error(`the job of ${attempt.notificationId} was not written`);
}

const seconds = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n));

function subscription(clientId: string, overrides: Partial<Subscription> = {}): Subscription {
  return subscriptionRecord(clientId, {
    url: "https://example.com/hook",
    description: "contract",
    publicKeyPem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
    privateKeyPem: "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n",
    createdAt: seconds(1),
    updatedAt: seconds(1),
    ...overrides,
  });
}

function notification(s: Subscription, overrides: Partial<Notification> = {}): Notification {
  return {
    id: newId("ntf"),
    subscriptionId: s.id,
    clientId: s.clientId,
    event: s.event,
    body: '{"Event":"Order.Created","Timestamp":"2026-01-01T00:00:00.000Z","Ünïcode":"✓"}',
    status: "pending",
    attemptCount: 0,
    createdAt: seconds(10),
    updatedAt: seconds(10),
    ...overrides,
  };
}

export function storeContract(test: TestFn, name: string, open: () => Promise<ContractStore>): void {
  test(`${name}: a client is created once per key hash, also when two start together`, async (t) => {
    const { clients } = await open();
    const hash = newId("cli");
    const [a, b] = await Promise.all([clients.ensureWithKey("first", hash), clients.ensureWithKey("second", hash)]);
    t.is(a.id, b.id);
    t.is((await clients.list()).filter((c) => c.name === "first" || c.name === "second").length, 1, "no orphan client from the loser");
    t.deepEqual((await clients.findByKeyHash(hash))?.client, a);
    t.is((await clients.ensureWithKey("again", hash)).id, a.id);
    t.is(await clients.findByKeyHash("no-such-hash"), undefined);
  });

  test(`${name}: subscriptions round-trip every field and are found by client and URL, oldest first`, async (t) => {
    const { clients, subscriptions } = await open();
    const owner = await clients.ensureWithKey("owner", newId("cli"));
    const other = await clients.ensureWithKey("other", newId("cli"));
    const older = subscription(owner.id, { createdAt: seconds(1) });
    const newer = subscription(owner.id, { createdAt: seconds(2), event: "Order.Shipped", enabled: false });
    const foreign = subscription(other.id);
    const elsewhere = subscription(owner.id, {
      url: "https://example.com/other",
      signatureScheme: "STANDARD_WEBHOOKS",
      rateLimitPerSecond: 7,
      sealedHeaders: "sealed:v1:opaque",
      filter: { Currency: { $in: ["EUR", "CHF"] }, "Customer.Country": "CH", $or: [{ TotalAmount: { $gte: 100.5 } }, { Vip: true }] },
    });
    for (const s of [newer, foreign, older, elsewhere]) await subscriptions.insert(s);

    t.deepEqual(await subscriptions.get(older.id), older);
    t.deepEqual(await subscriptions.get(newer.id), newer);
    t.deepEqual(await subscriptions.get(elsewhere.id), elsewhere);
    t.is(await subscriptions.get(newId("sub")), undefined);
    t.is(await subscriptions.get("../../etc/passwd"), undefined);
    t.deepEqual(
      (await subscriptions.findByUrl(owner.id, older.url)).map((s) => s.id),
      [older.id, newer.id],
    );
    t.deepEqual(
      (await subscriptions.findByUrl(other.id, older.url)).map((s) => s.id),
      [foreign.id],
    );
  });

  test(`${name}: an operator where a string belongs matches nothing`, async (t) => {
    const { clients, subscriptions } = await open();
    const owner = await clients.ensureWithKey("owner", newId("cli"));
    await subscriptions.insert(subscription(owner.id));
    const injected = { $ne: null } as unknown as string;
    t.deepEqual(await subscriptions.findByUrl(owner.id, injected).catch(() => []), []);
    t.is(await subscriptions.get(injected).catch(() => undefined), undefined);
    t.is(await clients.findByKeyHash(injected).catch(() => undefined), undefined);
  });

  test(`${name}: attempts append in order, move the status, and never lower the count`, async (t) => {
    const { clients, subscriptions, notifications, jobs } = await open();
    const owner = await clients.ensureWithKey("owner", newId("cli"));
    const s = subscription(owner.id);
    await subscriptions.insert(s);
    const n = notification(s);
    await accept(jobs, [n]);
    t.deepEqual(await notifications.get(n.id), n);
    t.is(await notifications.get(newId("ntf")), undefined);

    const first = {
      notificationId: n.id,
      attempt: 0,
      startedAt: seconds(20),
      durationMs: 15_000,
      error: "timeout: no answer within 15000 ms",
      succeeded: false,
    };
    await recordThroughJob(jobs, first, "pending");
    // A crash after the POST replays attempt 0: recorded twice, count stays 1.
    await recordThroughJob(jobs, first, "pending");
    t.is((await notifications.get(n.id))?.attemptCount, 1);

    const second = {
      notificationId: n.id,
      attempt: 1,
      startedAt: seconds(30),
      durationMs: 12,
      statusCode: 200,
      responseBody: "ok\u0000binary",
      succeeded: true,
    };
    await recordThroughJob(jobs, second, "delivered");
    const stored = await notifications.get(n.id);
    t.is(stored?.status, "delivered");
    t.is(stored?.attemptCount, 2);
    t.is(stored?.body, n.body, "the body is kept byte for byte");

    const attempts = await notifications.listAttempts(n.id);
    t.deepEqual(attempts, [first, first, { ...second, responseBody: "ok\uFFFDbinary" }]);
    t.false("statusCode" in (attempts[0] ?? {}), "absent fields stay absent");
    t.deepEqual(await notifications.listAttempts(newId("ntf")), []);
  });

  test(`${name}: reads and attempt records made together answer each caller`, async (t) => {
    const store = await open();
    const client = await store.clients.ensureWithKey("together", newId("cli"));
    const subscriptions = [subscription(client.id), subscription(client.id)];
    for (const s of subscriptions) await store.subscriptions.insert(s);
    const notifications = Array.from({ length: 20 }, (_, i) =>
      notification(subscriptions[i % 2] as Subscription, { body: `{"n":${i}}`, createdAt: seconds(500), updatedAt: seconds(500) }),
    );
    await Promise.all([accept(store.jobs, notifications.slice(0, 10)), accept(store.jobs, notifications.slice(10))]);

    const read = await Promise.all([...notifications.map((n) => store.notifications.get(n.id)), store.notifications.get(newId("ntf"))]);
    t.deepEqual(
      read.map((n) => n?.body),
      [...notifications.map((n) => n.body), undefined],
    );
    const subs = await Promise.all([...subscriptions, ...subscriptions].map((s) => store.subscriptions.get(s.id)));
    t.deepEqual(
      subs.map((s) => s?.id),
      [...subscriptions, ...subscriptions].map((s) => s.id),
    );

    // Attempts ending together, as deliveries running side by side end theirs.
    const locked = await lockJobs(
      store.jobs,
      notifications.map((n) => n.id),
    );
    const written = await Promise.all(
      locked.map((job, i) => {
        const held = { id: job.id, heldLock: job.lockedAt };
        const attempt = {
          notificationId: job.id,
          attempt: 0,
          startedAt: seconds(20),
          durationMs: i,
          statusCode: 200 + i,
          succeeded: i % 2 === 0,
        };
        return i % 2 === 0
          ? store.jobs.finish({ ...held, attempt, status: "delivered" })
          : store.jobs.retry({ ...held, attempt, nextRunAt: new Date(Date.now() + 3_600_000) });
      }),
    );
    t.true(written.every(Boolean));
    for (const [i, n] of notifications.entries()) {
      const stored = await store.notifications.get(n.id);
      t.is(stored?.status, i % 2 === 0 ? "delivered" : "pending");
      t.is(stored?.attemptCount, 1);
      t.deepEqual(
        (await store.notifications.listAttempts(n.id)).map((a) => [a.statusCode, a.durationMs]),
        [[200 + i, i]],
      );
    }
  });

  test(`${name}: clients are listed, keys are issued and revoked per client`, async (t) => {
    const { clients } = await open();
    const client = { id: newId("cli"), name: "Keys Inc", createdAt: seconds(5) };
    const first = { id: newId("key"), clientId: client.id, keyHash: newId("cli"), name: "", createdAt: seconds(5) };
    await clients.create(client, first);
    t.deepEqual(await clients.get(client.id), client);
    t.true((await clients.list()).some((c) => c.id === client.id));
    const second = { id: newId("key"), clientId: client.id, keyHash: newId("cli"), name: "second", createdAt: seconds(6) };
    await clients.addKey(second);
    t.is((await clients.findByKeyHash(second.keyHash))?.client.id, client.id);
    t.true(await clients.revokeKey(client.id, second.id, seconds(7)));
    t.true(await clients.revokeKey(client.id, second.id, seconds(8)), "revoking twice is fine");
    t.is(await clients.findByKeyHash(second.keyHash), undefined);
    t.is((await clients.findByKeyHash(first.keyHash))?.client.id, client.id);
    t.false(await clients.revokeKey(newId("cli"), first.id, seconds(9)), "another client's key is not found");
    t.false(await clients.revokeKey(client.id, newId("key"), seconds(9)));
  });

  test(`${name}: event types insert once, update, and keep payload key order`, async (t) => {
    const { eventTypes } = await open();
    const name = `Contract.T${newId("cli").slice(4, 12)}`;
    const type = {
      name,
      description: "first",
      samplePayload: { Zeta: 1, Alpha: { b: [1, "x", null], a: true }, $weird: "dollar key" },
      jsonSchema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" },
      createdAt: seconds(1),
      updatedAt: seconds(1),
    };
    t.true(await eventTypes.insert(type));
    t.false(await eventTypes.insert({ ...type, description: "second" }));
    const stored = await eventTypes.get(name);
    t.deepEqual(stored, type);
    t.deepEqual(Object.keys(stored?.samplePayload ?? {}), ["Zeta", "Alpha", "$weird"]);
    const { jsonSchema: _schema, ...withoutSchema } = type;
    t.true(await eventTypes.update({ ...withoutSchema, description: "changed", updatedAt: seconds(2) }));
    t.deepEqual(await eventTypes.get(name), { ...withoutSchema, description: "changed", updatedAt: seconds(2) });
    t.false(await eventTypes.update({ ...type, name: "Missing.Type" }));
    t.true((await eventTypes.list()).some((e) => e.name === name));
  });

  test(`${name}: subscriptions page by creation, update every field, track failures, delete with notifications`, async (t) => {
    const { clients, subscriptions, notifications, jobs } = await open();
    const owner = await clients.ensureWithKey("pager", newId("cli"));
    const list = [1, 2, 3].map((n) =>
      subscription(owner.id, { createdAt: seconds(n), event: n === 2 ? "Order.Shipped" : "Order.Created" }),
    );
    for (const s of list) await subscriptions.insert(s);
    const firstPage = await subscriptions.listByClient(owner.id, 2);
    t.deepEqual(
      firstPage.map((s) => s.id),
      [list[0]?.id, list[1]?.id],
    );
    const last = firstPage.at(-1) as Subscription;
    t.deepEqual(
      (await subscriptions.listByClient(owner.id, 2, last)).map((s) => s.id),
      [list[2]?.id],
    );
    t.deepEqual(
      (await subscriptions.listEnabledForEvent(owner.id, "Order.Created")).map((s) => s.id),
      [list[0]?.id, list[2]?.id],
    );

    // Publishes arriving together (one shared statement where the store shares them): each call gets
    // its own client's and event's subscriptions, in creation order, whoever else asked the same.
    const other = await clients.ensureWithKey("pager-other", newId("cli"));
    const theirs = subscription(other.id, { createdAt: seconds(4), event: "Order.Created" });
    await subscriptions.insert(theirs);
    const together = await Promise.all([
      subscriptions.listEnabledForEvent(owner.id, "Order.Created"),
      subscriptions.listEnabledForEvent(other.id, "Order.Created"),
      subscriptions.listEnabledForEvent(owner.id, "Order.Shipped"),
      subscriptions.listEnabledForEvent(owner.id, "Order.Created"),
      subscriptions.listEnabledForEvent(owner.id, "Order.Cancelled"),
    ]);
    t.deepEqual(
      together.map((found) => found.map((s) => s.id)),
      [[list[0]?.id, list[2]?.id], [theirs.id], [list[1]?.id], [list[0]?.id, list[2]?.id], []],
    );
    t.deepEqual(together[0]?.[0], list[0], "every field comes back");
    // Calls answered together may be handed one answer only if neither can change it.
    t.true(together[0] !== together[3] || Object.isFrozen(together[0]), "a list shared between calls can't be changed by either");

    const target = list[0] as Subscription;
    const rotated: Subscription = {
      ...target,
      url: "https://example.com/moved",
      description: "moved",
      nextPublicKeyPem: "next-public",
      nextPrivateKeyPem: "next-private",
      rotationDeadline: seconds(50),
      sealedHeaders: "sealed:v1:headers",
      filter: { $and: [{ Status: { $nin: ["cancelled", null] } }, { Lines: { $exists: true } }] },
      updatedAt: seconds(40),
    };
    t.true(await subscriptions.update(rotated, target.updatedAt));
    t.deepEqual(await subscriptions.get(target.id), rotated);
    t.false(await subscriptions.update({ ...rotated, description: "stale" }, target.updatedAt), "a stale read does not overwrite");
    const { nextPublicKeyPem: _a, nextPrivateKeyPem: _b, rotationDeadline: _c, sealedHeaders: _d, filter: _e, ...unrotated } = rotated;
    const settled = { ...unrotated, updatedAt: seconds(45) };
    t.true(await subscriptions.update(settled, rotated.updatedAt));
    t.deepEqual(await subscriptions.get(target.id), settled, "absent optional fields are cleared");
    t.false(await subscriptions.update({ ...settled, id: newId("sub") }, settled.updatedAt));

    t.deepEqual(await subscriptions.markFailing(target.id, seconds(60)), seconds(60));
    t.deepEqual(await subscriptions.markFailing(target.id, seconds(70)), seconds(60), "the streak keeps its start");
    t.true(await subscriptions.update({ ...settled, description: "edited" }, settled.updatedAt));
    t.deepEqual((await subscriptions.get(target.id))?.failingSince, seconds(60), "an owner's edit leaves the streak alone");
    await subscriptions.markHealthy(target.id);
    t.is((await subscriptions.get(target.id))?.failingSince, undefined);
    t.true(await subscriptions.disable(target.id, "too many failures", seconds(80)), "this call disabled it");
    t.false(await subscriptions.disable(target.id, "again", seconds(90)), "disabled already: nothing done");
    const disabled = await subscriptions.get(target.id);
    t.false(disabled?.enabled);
    t.is(disabled?.disabledReason, "too many failures");
    t.deepEqual(disabled?.disabledAt, seconds(80));
    t.deepEqual(
      (await subscriptions.listEnabledForEvent(owner.id, "Order.Created")).map((s) => s.id),
      [list[2]?.id],
    );

    const doomed = notification(target);
    const done = notification(target);
    await accept(jobs, [doomed, done]);
    await recordThroughJob(
      jobs,
      { notificationId: done.id, attempt: 0, startedAt: seconds(20), durationMs: 3, statusCode: 200, succeeded: true },
      "delivered",
    );
    await jobs.takeSlot(target.id, seconds(100), 60_000);
    t.true(await subscriptions.delete(target.id));
    t.is(await subscriptions.get(target.id), undefined);
    // Its throttle slot went with it: a subscription that came to have the same id starts afresh.
    await subscriptions.insert({ ...settled, id: target.id });
    t.deepEqual(await jobs.takeSlot(target.id, seconds(30), 1_000), seconds(30), "no throttle slot left behind");
    t.true(await subscriptions.delete(target.id));
    // Its notifications stay answerable by job id: the pending one ends as failed, saying why.
    t.like(await notifications.get(doomed.id), { status: "failed", attemptCount: 1 });
    t.like((await notifications.listAttempts(doomed.id)).at(-1), { attempt: 0, error: SUBSCRIPTION_DELETED, succeeded: false });
    t.like(await notifications.get(done.id), { status: "delivered", attemptCount: 1 }, "a delivered one is left as it was");
    t.is((await notifications.listAttempts(done.id)).length, 1);
    t.false(await subscriptions.delete(target.id));
  });

  test(`${name}: the log lists newest first by status; failed ones are found since a time`, async (t) => {
    const { clients, subscriptions, notifications, jobs } = await open();
    const owner = await clients.ensureWithKey("publisher", newId("cli"));
    const s = subscription(owner.id);
    await subscriptions.insert(s);
    const batch = [notification(s, { createdAt: seconds(10) }), notification(s, { createdAt: seconds(11) })];
    await accept(jobs, [...batch, notification(s, { createdAt: seconds(12) })]);

    const older = batch[0] as Notification;
    const newer = batch[1] as Notification;
    await recordThroughJob(
      jobs,
      { notificationId: older.id, attempt: 0, startedAt: seconds(20), durationMs: 1, statusCode: 500, succeeded: false },
      "failed",
    );
    const page = await notifications.list({ subscriptionId: s.id, limit: 2 });
    t.is(page.length, 2);
    t.is(page[0]?.createdAt.getTime(), seconds(12).getTime(), "newest first");
    const next = await notifications.list({ subscriptionId: s.id, limit: 10, before: page.at(-1) as Notification });
    t.deepEqual(
      next.map((n) => n.id),
      [older.id],
    );
    t.deepEqual(
      (await notifications.list({ subscriptionId: s.id, status: "failed", limit: 10 })).map((n) => n.id),
      [older.id],
    );
    t.deepEqual(
      (await notifications.listFailedSince(s.id, seconds(10), 10)).map((n) => n.id),
      [older.id],
    );
    t.deepEqual(await notifications.listFailedSince(s.id, seconds(11), 10), []);
    t.is((await notifications.get(newer.id))?.status, "pending");
    const redelivery = notification(s, { redeliveryOf: older.id });
    await accept(jobs, [redelivery]);
    t.is((await notifications.get(redelivery.id))?.redeliveryOf, older.id);
  });
}
