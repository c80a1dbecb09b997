import test from "ava";
import type { NewDelivery } from "../../src/delivery/agenda/delivery-job-store.js";
import { PostgresJobStore } from "../../src/delivery/agenda/postgres-job-store.js";
import { endpointOf } from "../../src/delivery/endpoint.js";
import { EventCatalog } from "../../src/domain/event-catalog.js";
import { newId } from "../../src/domain/ids.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import { Notifications } from "../../src/domain/notifications.js";
import type { DeliveryQueue, SubscriptionStore } from "../../src/domain/ports.js";
import type { Subscriptions } from "../../src/domain/subscriptions.js";
import { storeForFile } from "../helpers/opened-store.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

/**
 * A publish whose subscriptions change between its read and its insert, as
 * another instance's writes would make them (the embedded store, with the
 * job store checking fan-outs as on a shared PostgreSQL).
 */
const opened = storeForFile(test);

async function publisher(changesAfterReads: number) {
  const { store, database } = opened();
  if (database.kind !== "postgres") throw new Error("a SQL store");
  const catalog = new EventCatalog(store.eventTypes);
  await catalog.seed([{ name: "Churn.Tick", description: "", samplePayload: {} }]);
  const clientId = (await store.clients.ensureWithKey("churn", newId("cli"))).id;
  const subscription = subscriptionRecord(clientId, { event: "Churn.Tick" });
  await store.subscriptions.insert(subscription);
  const jobs = new PostgresJobStore(
    { api: database.api, bookkeeping: database.bookkeeping },
    { owner: "instance-1", lockLifetimeMs: 30_000, checkFanOuts: true },
  );
  await jobs.prepare();
  // The first `changesAfterReads` reads are each followed by another instance's write to the subscription.
  let reads = 0;
  const subscriptionStore: SubscriptionStore = Object.assign(Object.create(store.subscriptions) as SubscriptionStore, {
    listEnabledForEvent: async (client: string, event: string, options?: { fresh?: boolean }) => {
      const answer = await store.subscriptions.listEnabledForEvent(client, event, options);
      if (reads++ < changesAfterReads)
        await database.api.query("UPDATE wh_subscriptions SET description = $2 WHERE id = $1", [subscription.id, `change ${reads}`]);
      return answer;
    },
  });
  // The engine's part of accepting (agenda-delivery-engine.ts), without its feed: nothing goes in locked.
  const deliveries = (notifications: readonly Notification[], subscriptions: readonly Subscription[]): NewDelivery[] =>
    notifications.map((notification) => ({
      notification,
      endpoint: endpointOf(notification.clientId, subscriptions.find((s) => s.id === notification.subscriptionId)?.url ?? ""),
    }));
  const queue: DeliveryQueue = {
    accept: async (notifications, subscriptions, options) => {
      const fanOut = options?.check === false ? undefined : subscriptions;
      await jobs.insert(deliveries(notifications, subscriptions), (all) => all.map(() => false), fanOut);
    },
    acceptOnce: (client, key, notifications, subscriptions, options) =>
      jobs.insertOnce(client, key, deliveries(notifications, subscriptions), options?.check === false ? undefined : subscriptions),
  };
  const notifications = new Notifications({
    store: store.notifications,
    subscriptionStore,
    queue,
    catalog,
    // Publishing does not use the subscriptions service.
    subscriptions: {} as Subscriptions,
    maxPayloadBytes: 65_536,
    observer: { observe: () => {} },
  });
  const publish = (idempotencyKey?: string) =>
    notifications.publish({ clientId, event: "Churn.Tick", payload: {}, ...(idempotencyKey ? { idempotencyKey } : {}) });
  return { publish, reads: () => reads, store, subscription };
}

test.serial("a fan-out that changed once is read again and stored", async (t) => {
  const { publish, reads, store, subscription } = await publisher(1);
  const { jobIds } = await publish();
  t.is(reads(), 2, "the kept answer, then a fresh one");
  t.is(jobIds.length, 1);
  t.is((await store.notifications.get(jobIds[0] ?? ""))?.subscriptionId, subscription.id);
});

test.serial("subscriptions that keep changing never stop a publish: its last read is stored as read", async (t) => {
  const { publish, reads, store } = await publisher(Number.POSITIVE_INFINITY);
  const { jobIds } = await publish();
  t.is(reads(), 3);
  t.is(jobIds.length, 1);
  t.truthy(await store.notifications.get(jobIds[0] ?? ""));
  const keyed = await publish("key-1");
  t.is(reads(), 6, "an idempotent publish reads as often");
  t.false(keyed.duplicate);
  t.truthy(await store.notifications.get(keyed.jobIds[0] ?? ""));
  t.deepEqual((await publish("key-1")).jobIds, keyed.jobIds, "and its key was claimed once");
});
