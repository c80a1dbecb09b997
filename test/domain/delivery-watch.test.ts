import test from "ava";
import type { ActivityFilter, DeliveryActivity } from "../../src/domain/delivery-activity.js";
import { DeliveryWatches, type LiveWatcher } from "../../src/domain/delivery-watch.js";
import { NotFoundError, ValidationError } from "../../src/domain/errors.js";
import type { DeliveryAttempt, Notification, Subscription } from "../../src/domain/model.js";
import type { ClientStore, NotificationQuery, NotificationStore, SubscriptionStore } from "../../src/domain/ports.js";
import { ActivityWatcher } from "../../src/live/activity-watcher.js";

const t0 = new Date("2026-11-23T01:00:00Z");
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);

const subscription = (id: string, clientId: string, url = `https://example.com/${id}`): Subscription =>
  ({ id, clientId, event: "Order.Created", url, createdAt: t0 }) as Subscription;
const subscriptions = [
  subscription("sub_a", "cli_a"),
  subscription("sub_b", "cli_b"),
  subscription("sub_relay", "cli_a", "relay:sub_relay"),
];

const notification = (id: string, subscriptionId: string, createdAt: Date, status: Notification["status"]): Notification => ({
  id,
  subscriptionId,
  clientId: subscriptionId === "sub_b" ? "cli_b" : "cli_a",
  event: "Order.Created",
  body: `{"id":"${id}"}`,
  status,
  attemptCount: 1,
  createdAt,
  updatedAt: createdAt,
});
const notifications = [
  notification("ntf_old", "sub_a", at(-60), "delivered"),
  notification("ntf_new", "sub_a", at(10), "delivered"),
  notification("ntf_theirs", "sub_b", at(10), "delivered"),
];
const attempts: Record<string, DeliveryAttempt[]> = {
  ntf_old: [{ notificationId: "ntf_old", attempt: 0, startedAt: at(-59), durationMs: 5, statusCode: 200, succeeded: true }],
  ntf_new: [{ notificationId: "ntf_new", attempt: 0, startedAt: at(11), durationMs: 5, statusCode: 200, succeeded: true }],
  ntf_theirs: [{ notificationId: "ntf_theirs", attempt: 0, startedAt: at(11), durationMs: 5, statusCode: 200, succeeded: true }],
};

/** The stores as a watch reads them, from the arrays above (only the methods it uses). */
const stores = {
  clients: { list: async () => [{ id: "cli_a" }, { id: "cli_b" }] } as unknown as ClientStore,
  subscriptions: {
    get: async (id: string) => subscriptions.find((each) => each.id === id),
    listByClient: async (clientId: string) => subscriptions.filter((each) => each.clientId === clientId),
  } as unknown as SubscriptionStore,
  notifications: {
    get: async (id: string) => notifications.find((each) => each.id === id),
    list: async (query: NotificationQuery) =>
      notifications
        .filter((each) => each.subscriptionId === query.subscriptionId)
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
        .slice(0, query.limit),
    listAttempts: async (id: string) => attempts[id] ?? [],
  } as unknown as NotificationStore,
};

function watches() {
  const attached: { filter: ActivityFilter; watcher: ActivityWatcher }[] = [];
  const feed = {
    attach(filter: ActivityFilter): LiveWatcher {
      const watcher = new ActivityWatcher(filter, 100);
      attached.push({ filter, watcher });
      return watcher;
    },
    announced: async () => {},
  };
  const leases = { hold: async () => ({ release: () => {} }) };
  return { watches: new DeliveryWatches({ feed, ...stores, leases }), attached };
}

test("a client's watch is filtered to its client; another client's subscription is not found", async (t) => {
  const { watches: opened, attached } = watches();
  await opened.open({ clientId: "cli_a", event: "Order.Created", outcome: "failed" });
  t.deepEqual(attached[0]?.filter, { clientId: "cli_a", event: "Order.Created", outcome: "failed" });
  await t.throwsAsync(opened.open({ clientId: "cli_a", subscriptionId: "sub_b" }), { instanceOf: NotFoundError });
  await t.throwsAsync(opened.open({ clientId: "cli_a", relaySubscriptionIds: ["sub_a"] }), {
    instanceOf: NotFoundError,
    message: /relay subscription/,
  });
  await t.throwsAsync(opened.open({ clientId: "cli_b", relaySubscriptionIds: ["sub_relay"] }), { instanceOf: NotFoundError });
  await t.throwsAsync(opened.open({ clientId: "cli_a", since: new Date(Date.now() + 60_000) }), { instanceOf: ValidationError });
  t.is(attached.length, 1, "a refused watch attaches nothing, or closes what it attached");
});

test("since replays the client's notifications created since then, in time order, and the live feed does not repeat them", async (t) => {
  const { watches: opened, attached } = watches();
  const watch = await opened.open({ clientId: "cli_a", since: t0 });
  t.deepEqual(
    watch.replay.map((each) => `${each.jobId} ${each.kind}`),
    ["ntf_new accepted", "ntf_new attempt-finished", "ntf_new delivered"],
  );
  const live = attached[0]?.watcher as ActivityWatcher;
  const [, finished] = watch.replay as DeliveryActivity[];
  live.offer({ ...(finished as DeliveryActivity), replayed: false });
  live.offer({ kind: "accepted", at: at(20), clientId: "cli_a", subscriptionId: "sub_a", event: "Order.Created", jobId: "ntf_next" });
  t.is((await watch.next())?.jobId, "ntf_next", "the repeat was skipped");
  watch.close();
  t.is(await watch.next(), undefined);
});

test("an admin's replay covers every client; a relay request from another instance gets its body from the log", async (t) => {
  const { watches: opened, attached } = watches();
  const watch = await opened.open({ since: t0 });
  t.deepEqual([...new Set(watch.replay.map((each) => each.jobId))].sort(), [...new Set(["ntf_new", "ntf_theirs"])].sort());
  const relayed = await opened.open({ clientId: "cli_a", relaySubscriptionIds: ["sub_relay"] });
  const relayWatcher = attached[1]?.watcher as ActivityWatcher;
  relayWatcher.offer({
    kind: "relay-request",
    at: t0,
    clientId: "cli_a",
    subscriptionId: "sub_relay",
    event: "Order.Created",
    jobId: "ntf_new",
    attempt: 0,
  });
  t.is((await relayed.next())?.body, '{"id":"ntf_new"}');
});
