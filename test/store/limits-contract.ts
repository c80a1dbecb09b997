import type { TestFn } from "ava";
import type { JobStore } from "../../src/delivery/job-store.js";
import { newId } from "../../src/domain/ids.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";
import { accept, type ContractStore, recordThroughJob } from "./store-contract.js";

/** A keyed publish with no deliveries: how the store answers its key. */
async function insertOnce(jobs: JobStore, clientId: string, key: string): Promise<{ duplicate: boolean }> {
  const [answer] = await jobs.insertBatch([{ clientId, key, deliveries: [] }]);
  if (!answer) throw new Error("insertBatch answered nothing");
  return answer;
}

/**
 * The storage port's part in clients' limits, run against every adapter
 * beside the store contract (test/store/store.test.ts): the retention
 * purge and the subscription quota. A purge runs over every client of the
 * shared store: the purge tests take turns (serial), and their
 * notifications are made in 2020, with their clock stopped in 2020 too,
 * long before the other tests' (2026).
 */

const DAY = 86_400_000;
const at = (day: number) => new Date(Date.UTC(2020, 0, day));

function notificationOf(s: Subscription, createdAt: Date): Notification {
  return {
    id: newId("ntf"),
    subscriptionId: s.id,
    clientId: s.clientId,
    event: s.event,
    body: '{"Event":"Order.Created","Timestamp":"2020-01-01T00:00:00.000Z"}',
    status: "pending",
    attemptCount: 0,
    createdAt,
    updatedAt: createdAt,
  };
}

/** Stores a notification made on `day` and runs its attempts: delivered, failed for good, or a retry left pending. */
async function made(store: ContractStore, s: Subscription, day: number, end: "delivered" | "failed" | "pending"): Promise<Notification> {
  const n = notificationOf(s, at(day));
  await accept(store.jobs, [n]);
  const attempt = { notificationId: n.id, attempt: 0, startedAt: at(day), durationMs: 5, succeeded: end === "delivered" };
  await recordThroughJob(store.jobs, { ...attempt, statusCode: end === "delivered" ? 200 : 500 }, end);
  return n;
}

export function limitsContract(test: TestFn, name: string, open: () => Promise<ContractStore>): void {
  test(`${name}: a client's limits are kept, changed one at a time, and cleared`, async (t) => {
    const { clients } = await open();
    const owner = await clients.ensureWithKey("limits", newId("cli"));
    t.false("retentionMs" in owner || "maxSubscriptions" in owner, "a new client has the service's limits");
    const set = await clients.setLimits(owner.id, { retentionMs: 7 * DAY, maxSubscriptions: 3 });
    t.deepEqual(set, { ...owner, retentionMs: 7 * DAY, maxSubscriptions: 3 });
    t.deepEqual(await clients.get(owner.id), set);
    t.deepEqual(await clients.setLimits(owner.id, { maxSubscriptions: null }), { ...owner, retentionMs: 7 * DAY }, "the other stays");
    t.deepEqual(await clients.setLimits(owner.id, {}), { ...owner, retentionMs: 7 * DAY });
    t.deepEqual(await clients.setLimits(owner.id, { retentionMs: null }), owner);
    t.is(await clients.setLimits(newId("cli"), { retentionMs: DAY }), undefined);
  });

  test.serial(
    `${name}: the purge deletes ended notifications past their client's retention, with their attempts, and nothing pending`,
    async (t) => {
      const store = await open();
      const { clients, subscriptions, notifications } = store;
      const plain = await clients.ensureWithKey("retention default", newId("cli"));
      const keeper = await clients.ensureWithKey("retention longer", newId("cli"));
      await clients.setLimits(keeper.id, { retentionMs: 30 * DAY });
      const ofPlain = subscriptionRecord(plain.id);
      const ofKeeper = subscriptionRecord(keeper.id);
      const doomed = subscriptionRecord(plain.id, { event: "Order.Shipped" });
      for (const s of [ofPlain, ofKeeper, doomed]) await subscriptions.insert(s);

      const delivered = await made(store, ofPlain, 1, "delivered");
      const failed = await made(store, ofPlain, 2, "failed");
      const pending = await made(store, ofPlain, 1, "pending");
      const recent = await made(store, ofPlain, 9, "delivered");
      const kept = await made(store, ofKeeper, 1, "delivered");
      // Its subscription deleted: failed at once, while its job is still to run out.
      const orphaned = notificationOf(doomed, at(1));
      await accept(store.jobs, [orphaned]);
      await subscriptions.delete(doomed.id);
      t.is((await notifications.get(orphaned.id))?.status, "failed");

      // Retention 5 days on 10 January 2020: what ended before the 5th goes.
      const now = at(10);
      const counts = await notifications.purgeEnded(now, 5 * DAY, 100);
      t.deepEqual(counts, { notifications: 2, attempts: 2 });
      t.is(await notifications.get(delivered.id), undefined);
      t.is(await notifications.get(failed.id), undefined);
      t.deepEqual(await notifications.listAttempts(delivered.id), []);
      for (const n of [pending, recent, kept, orphaned]) t.truthy(await notifications.get(n.id), n.id);
      t.is((await notifications.listAttempts(pending.id)).length, 1, "a pending one keeps its attempts");
      t.deepEqual(await notifications.purgeEnded(now, 5 * DAY, 100), { notifications: 0, attempts: 0 });
      t.true(((await notifications.oldestCreatedAt())?.getTime() ?? Infinity) <= at(1).getTime());

      // A shorter retention of its own reaches further; 0 of a limit deletes nothing.
      await clients.setLimits(keeper.id, { retentionMs: DAY });
      t.deepEqual(await notifications.purgeEnded(now, 5 * DAY, 0), { notifications: 0, attempts: 0 });
      t.deepEqual(await notifications.purgeEnded(now, 5 * DAY, 100), { notifications: 1, attempts: 1 });
      t.is(await notifications.get(kept.id), undefined);
    },
  );

  test.serial(`${name}: purges at once delete each notification once, a batch at a time`, async (t) => {
    const store = await open();
    const owner = await store.clients.ensureWithKey("retention race", newId("cli"));
    const s = subscriptionRecord(owner.id);
    await store.subscriptions.insert(s);
    const made10 = [];
    for (let i = 0; i < 10; i++) made10.push(await made(store, s, 3, "delivered"));
    // Each client's retention of a day on 5 January: all ten are past it, and no other test's.
    await store.clients.setLimits(owner.id, { retentionMs: DAY });
    const purge = () => store.notifications.purgeEnded(at(5), 365 * DAY, 3);
    let deleted = 0;
    for (;;) {
      const rounds = await Promise.all([purge(), purge()]);
      const round = rounds.reduce((sum, r) => sum + r.notifications, 0);
      t.true(rounds.every((r) => r.notifications <= 3 && r.attempts === r.notifications));
      deleted += round;
      if (round === 0) break;
    }
    t.is(deleted, 10);
    for (const n of made10) t.is(await store.notifications.get(n.id), undefined);
  });

  test.serial(`${name}: idempotency keys go after a day or their client's shorter retention, each once, a batch at a time`, async (t) => {
    const { clients, jobs, notifications } = await open();
    const plain = await clients.ensureWithKey("keys kept a day", newId("cli"));
    const brief = await clients.ensureWithKey("keys kept a minute", newId("cli"));
    await clients.setLimits(brief.id, { retentionMs: 60_000 });
    const keys = ["a", "b", "c", "d", "e"];
    for (const key of keys) {
      await insertOnce(jobs, plain.id, key);
      await insertOnce(jobs, brief.id, key);
    }
    // Keys are stored at the store's clock; the purge is asked as if later. The service's retention: 30 days.
    const stored = Date.now();
    const purge = (afterMs: number, limit: number) => notifications.purgeExpiredKeys(new Date(stored + afterMs), 30 * DAY, DAY, limit);
    const purgeAll = async (afterMs: number) => {
      let deleted = 0;
      for (;;) {
        const rounds = await Promise.all([purge(afterMs, 2), purge(afterMs, 2)]);
        t.true(
          rounds.every((r) => r <= 2),
          `batches of 2: ${rounds}`,
        );
        const round = rounds.reduce((sum, r) => sum + r, 0);
        if (round === 0) return deleted;
        deleted += round;
      }
    };

    t.is(await purge(-60_000, 100), 0, "none has expired yet");
    t.is(await purgeAll(2 * 60_000), keys.length, "the brief client's keys, after its minute");
    t.false((await insertOnce(jobs, brief.id, "a")).duplicate, "a repeat of a purged key is new");
    t.true((await insertOnce(jobs, plain.id, "a")).duplicate, "the other client's key is kept");

    // A day later: every key of the service's retention goes (those of other tests too: at least ours).
    t.true((await purgeAll(DAY + 2 * 60_000)) >= keys.length);
    t.false((await insertOnce(jobs, plain.id, "a")).duplicate);
  });

  test(`${name}: a client holds at most its quota of subscriptions and one per event and URL, also when created at once`, async (t) => {
    const { clients, subscriptions } = await open();
    const owner = await clients.ensureWithKey("quota", newId("cli"));
    const first = subscriptionRecord(owner.id, { url: "https://example.com/a" });
    t.is(await subscriptions.refusal(first, 3), undefined, "no refusal foreseen for the first");
    t.deepEqual(await subscriptions.insertWithinQuota(first, 3), { inserted: true });
    t.deepEqual(await subscriptions.refusal(subscriptionRecord(owner.id, { url: "https://example.com/a" }), 3), {
      inserted: false,
      duplicateOf: first.id,
    });
    t.deepEqual(await subscriptions.insertWithinQuota(subscriptionRecord(owner.id, { url: "https://example.com/a" }), 3), {
      inserted: false,
      duplicateOf: first.id,
    });
    const otherEvent = subscriptionRecord(owner.id, { url: "https://example.com/a", event: "Order.Shipped" });
    t.deepEqual(await subscriptions.insertWithinQuota(otherEvent, 3), { inserted: true }, "another event to the same URL");
    const otherScheme = subscriptionRecord(owner.id, { url: "https://example.com/a", signatureScheme: "STANDARD_WEBHOOKS" });
    t.deepEqual(await subscriptions.insertWithinQuota(otherScheme, 3), { inserted: true }, "the same with another scheme");

    // Five at once for the one place left: exactly one gets it.
    const racing = Array.from({ length: 5 }, (_, i) => subscriptionRecord(owner.id, { url: `https://example.com/r${i}` }));
    const outcomes = await Promise.all(racing.map((s) => subscriptions.insertWithinQuota(s, 4)));
    // Without transactions (MongoDB) both of two at once may be refused; never both kept.
    const winners = outcomes.filter((o) => o.inserted).length;
    if (name === "mongodb") t.true(winners <= 1, JSON.stringify(outcomes));
    else t.is(winners, 1, JSON.stringify(outcomes));
    t.true(outcomes.filter((o) => !o.inserted).every((o) => "quota" in o && o.quota === 4));
    t.true((await subscriptions.listByClient(owner.id, 100)).length <= 4);

    // Its own quota wins over the service's.
    await clients.setLimits(owner.id, { maxSubscriptions: 10 });
    const more = subscriptionRecord(owner.id, { url: "https://example.com/more" });
    t.deepEqual(await subscriptions.insertWithinQuota(more, 3), { inserted: true });
    await clients.setLimits(owner.id, { maxSubscriptions: 1 });
    t.deepEqual(await subscriptions.refusal(subscriptionRecord(owner.id, { url: "https://example.com/x" }), 3), {
      inserted: false,
      quota: 1,
    });
    t.deepEqual(await subscriptions.insertWithinQuota(subscriptionRecord(owner.id, { url: "https://example.com/x" }), 3), {
      inserted: false,
      quota: 1,
    });

    // The same one created five times at once: one is kept.
    const fresh = await clients.ensureWithKey("duplicates", newId("cli"));
    const twins = Array.from({ length: 5 }, () => subscriptionRecord(fresh.id, { url: "https://example.com/twin" }));
    const twinOutcomes = await Promise.all(twins.map((s) => subscriptions.insertWithinQuota(s, 100)));
    const kept = await subscriptions.findByUrl(fresh.id, "https://example.com/twin");
    if (name === "mongodb") t.true(kept.length <= 1);
    else t.is(kept.length, 1);
    t.true(twinOutcomes.filter((o) => !o.inserted).every((o) => "duplicateOf" in o));
  });
}
