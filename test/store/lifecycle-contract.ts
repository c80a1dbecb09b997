import type { TestFn } from "ava";
import { newId } from "../../src/domain/ids.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import type { DeletedClientPurge } from "../../src/domain/ports.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";
import { accept, type ContractStore, recordThroughJob } from "./store-contract.js";

/**
 * The storage port's part in a client's lifecycle, run against every adapter
 * beside the store contract (test/store/store.test.ts): its keys as listed,
 * disabling, and deleting with the purge that follows. A purge takes the
 * oldest deleted client of the shared store, so the tests that delete take
 * turns (serial).
 */

const at = (second: number) => new Date(Date.UTC(2026, 1, 1, 0, 0, second));

function notificationOf(s: Subscription): Notification {
  const createdAt = new Date();
  return {
    id: newId("ntf"),
    subscriptionId: s.id,
    clientId: s.clientId,
    event: s.event,
    body: '{"Event":"Order.Created"}',
    status: "pending",
    attemptCount: 0,
    createdAt,
    updatedAt: createdAt,
  };
}

/** Purges batch by batch until one finds nothing; the batches' sum. */
async function purgeAll(store: ContractStore, limit: number): Promise<DeletedClientPurge & { batches: number }> {
  const sum = { notifications: 0, attempts: 0, others: 0, batches: 0 };
  for (;;) {
    const batch = await store.clients.purgeDeleted(limit);
    if (batch.notifications + batch.attempts + batch.others === 0) return sum;
    sum.notifications += batch.notifications;
    sum.attempts += batch.attempts;
    sum.others += batch.others;
    sum.batches++;
  }
}

export function lifecycleContract(test: TestFn, name: string, open: () => Promise<ContractStore>): void {
  test(`${name}: a client's keys are listed with name, creation, last use and revocation, and never a secret`, async (t) => {
    const { clients } = await open();
    const client = { id: newId("cli"), name: "Listed", createdAt: at(1) };
    const first = { id: newId("key"), clientId: client.id, keyHash: newId("cli"), name: "first", createdAt: at(1) };
    const second = { id: newId("key"), clientId: client.id, keyHash: newId("cli"), name: "", createdAt: at(2) };
    await clients.create(client, first);
    await clients.addKey(second);
    t.deepEqual(await clients.listKeys(client.id), [first, second]);
    t.like(await clients.findByKeyHash(second.keyHash), { keyId: second.id, client: { id: client.id } });

    await clients.markKeyUsed(first.id, at(10), 60_000);
    await clients.markKeyUsed(first.id, at(40), 60_000);
    t.deepEqual((await clients.listKeys(client.id))[0]?.lastUsedAt, at(10), "a use within the minute writes nothing");
    await clients.markKeyUsed(first.id, at(71), 60_000);
    t.deepEqual((await clients.listKeys(client.id))[0]?.lastUsedAt, at(71));

    t.deepEqual((await clients.validKeys([first.id, second.id, newId("key")])).sort(), [first.id, second.id].sort());
    await clients.revokeKey(client.id, second.id, at(80));
    t.deepEqual((await clients.listKeys(client.id))[1], { ...second, revokedAt: at(80) });
    t.deepEqual(await clients.validKeys([first.id, second.id]), [first.id]);
    t.deepEqual(await clients.listKeys(newId("cli")), []);
  });

  test(`${name}: a client is disabled with a reason, listed as barred, and enabled again`, async (t) => {
    const { clients } = await open();
    const client = await clients.ensureWithKey("to disable", newId("cli"));
    const disabled = await clients.setDisabled(client.id, { at: at(5), reason: "unpaid invoice" });
    t.deepEqual(disabled, { ...client, disabled: { at: at(5), reason: "unpaid invoice" } });
    t.deepEqual(await clients.get(client.id), disabled);
    t.true((await clients.listBarred()).some((b) => b.id === client.id && b.disabledReason === "unpaid invoice"));
    t.deepEqual(await clients.setDisabled(client.id, null), client);
    t.false((await clients.listBarred()).some((b) => b.id === client.id));
    t.is(await clients.setDisabled(newId("cli"), { at: at(5), reason: "none" }), undefined);
  });

  test.serial(`${name}: a deleted client is gone at once to every lookup, and its data in batches, pending jobs too`, async (t) => {
    const store = await open();
    const { clients, subscriptions, notifications } = store;
    const keyHash = newId("cli");
    const client = await clients.ensureWithKey("to delete", keyHash);
    const keyId = (await clients.findByKeyHash(keyHash))?.keyId ?? "";
    const other = await clients.ensureWithKey("stays", newId("cli"));
    const ofClient = subscriptionRecord(client.id);
    const ofOther = subscriptionRecord(other.id);
    for (const s of [ofClient, ofOther]) await subscriptions.insert(s);
    const delivered = Array.from({ length: 5 }, () => notificationOf(ofClient));
    await accept(store.jobs, delivered);
    for (const n of delivered) {
      await recordThroughJob(
        store.jobs,
        { notificationId: n.id, attempt: 0, startedAt: at(9), durationMs: 1, statusCode: 200, succeeded: true },
        "delivered",
      );
    }
    const pending = notificationOf(ofClient);
    const kept = notificationOf(ofOther);
    await accept(store.jobs, [pending, kept]);
    // Its subscription is throttled: slots taken, a request let out.
    await store.jobs.takeSlot(ofClient.id, at(100), 60_000);
    t.is(await store.jobs.claimSend(ofClient.id, at(100), 60_000), undefined);

    t.true(await clients.markDeleted(client.id, at(20)));
    t.false(await clients.markDeleted(client.id, at(21)), "deleting twice finds none");
    t.is(await clients.get(client.id), undefined);
    t.false((await clients.list()).some((c) => c.id === client.id));
    t.is(await clients.findByKeyHash(keyHash), undefined);
    t.deepEqual(await clients.listKeys(client.id), [], "its keys go at once");
    t.deepEqual(await clients.validKeys([keyId]), []);
    t.true((await clients.listBarred()).some((b) => b.id === client.id && b.disabledReason === undefined));
    t.is(await clients.setDisabled(client.id, { at: at(22), reason: "late" }), undefined);

    const purged = await purgeAll(store, 2);
    t.is(purged.notifications, 6);
    t.is(purged.attempts, 5);
    t.true(purged.batches >= 4, `batches of 2: ${purged.batches}`);
    for (const n of [...delivered, pending]) t.is(await notifications.get(n.id), undefined, n.id);
    t.deepEqual(await notifications.listAttempts(delivered[0]?.id ?? ""), []);
    t.is(await subscriptions.get(ofClient.id), undefined);
    t.false(
      (await clients.listBarred()).some((b) => b.id === client.id),
      "the client itself is gone once it holds nothing",
    );
    // Nothing of its throttling is left: a subscription that came to have the same id starts afresh.
    await subscriptions.insert({ ...ofOther, id: ofClient.id });
    t.deepEqual(await store.jobs.takeSlot(ofClient.id, at(30), 1_000), at(30), "no throttle slot left behind");
    t.is(await store.jobs.claimSend(ofClient.id, at(30), 1_000), undefined, "no send slot left behind");
    t.truthy(await notifications.get(kept.id), "another client's notification stays");
    t.truthy(await subscriptions.get(ofOther.id));
    t.truthy(await clients.get(other.id));
  });
}
