import type { TestFn } from "ava";
import { newId } from "../../src/domain/ids.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import type { Store } from "../../src/domain/ports.js";

/**
 * The storage port's contract, written once and run against every adapter
 * (test/store/store.test.ts), as Agenda runs one suite against each backend.
 */
export interface ContractContext {
  store: Store;
}

const seconds = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n));

function subscription(clientId: string, overrides: Partial<Subscription> = {}): Subscription {
  return {
    id: newId("sub"),
    clientId,
    event: "Order.Created",
    url: "https://example.com/hook",
    description: "contract",
    enabled: true,
    publicKeyPem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
    privateKeyPem: "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n",
    createdAt: seconds(1),
    updatedAt: seconds(1),
    ...overrides,
  };
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

export function storeContract(test: TestFn<ContractContext>, name: string): void {
  test(`${name}: a client is created once per key hash, also when two start together`, async (t) => {
    const { clients } = t.context.store;
    const hash = newId("cli");
    const [a, b] = await Promise.all([clients.ensureWithKey("first", hash), clients.ensureWithKey("second", hash)]);
    t.is(a.id, b.id);
    t.deepEqual(await clients.findByKeyHash(hash), a);
    t.is((await clients.ensureWithKey("again", hash)).id, a.id);
    t.is(await clients.findByKeyHash("no-such-hash"), undefined);
  });

  test(`${name}: subscriptions round-trip every field and are found by client and URL, oldest first`, async (t) => {
    const { clients, subscriptions } = t.context.store;
    const owner = await clients.ensureWithKey("owner", newId("cli"));
    const other = await clients.ensureWithKey("other", newId("cli"));
    const older = subscription(owner.id, { createdAt: seconds(1) });
    const newer = subscription(owner.id, { createdAt: seconds(2), event: "Order.Shipped", enabled: false });
    const foreign = subscription(other.id);
    const elsewhere = subscription(owner.id, { url: "https://example.com/other" });
    for (const s of [newer, foreign, older, elsewhere]) await subscriptions.insert(s);

    t.deepEqual(await subscriptions.get(older.id), older);
    t.deepEqual(await subscriptions.get(newer.id), newer);
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
    const { clients, subscriptions } = t.context.store;
    const owner = await clients.ensureWithKey("owner", newId("cli"));
    await subscriptions.insert(subscription(owner.id));
    const injected = { $ne: null } as unknown as string;
    t.deepEqual(await subscriptions.findByUrl(owner.id, injected).catch(() => []), []);
    t.is(await subscriptions.get(injected).catch(() => undefined), undefined);
    t.is(await clients.findByKeyHash(injected).catch(() => undefined), undefined);
  });

  test(`${name}: notifications are stored unscheduled until marked, oldest first, bounded`, async (t) => {
    const { clients, subscriptions, notifications } = t.context.store;
    const owner = await clients.ensureWithKey("owner", newId("cli"));
    const s = subscription(owner.id);
    await subscriptions.insert(s);
    const batch = [1, 2, 3, 4].map((n) => notification(s, { createdAt: seconds(100 + n), updatedAt: seconds(100 + n) }));
    await notifications.insert(batch);
    await notifications.insert([]);
    t.deepEqual(await notifications.get(batch[0]?.id as string), batch[0]);
    t.is(await notifications.get(newId("ntf")), undefined);

    const before = seconds(104); // excludes the fourth
    const ids = await notifications.listUnscheduled(before, 10);
    t.deepEqual(
      ids.filter((id) => batch.some((n) => n.id === id)),
      batch.slice(0, 3).map((n) => n.id),
    );
    t.is((await notifications.listUnscheduled(before, 1)).length, 1);
    await notifications.markScheduled(batch.slice(0, 2).map((n) => n.id));
    await notifications.markScheduled([]);
    const left = await notifications.listUnscheduled(before, 10);
    t.false(left.includes(batch[0]?.id as string));
    t.true(left.includes(batch[2]?.id as string));
  });

  test(`${name}: attempts append in order, move the status, and never lower the count`, async (t) => {
    const { clients, subscriptions, notifications } = t.context.store;
    const owner = await clients.ensureWithKey("owner", newId("cli"));
    const s = subscription(owner.id);
    await subscriptions.insert(s);
    const n = notification(s);
    await notifications.insert([n]);

    const first = {
      notificationId: n.id,
      attempt: 0,
      startedAt: seconds(20),
      durationMs: 15_000,
      error: "timeout: no answer within 15000 ms",
      succeeded: false,
    };
    await notifications.recordAttempt(first, "pending");
    // A crash after the POST replays attempt 0: recorded twice, count stays 1.
    await notifications.recordAttempt(first, "pending");
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
    await notifications.recordAttempt(second, "delivered");
    const stored = await notifications.get(n.id);
    t.is(stored?.status, "delivered");
    t.is(stored?.attemptCount, 2);
    t.is(stored?.body, n.body, "the body is kept byte for byte");

    const attempts = await notifications.listAttempts(n.id);
    t.deepEqual(attempts, [first, first, { ...second, responseBody: "ok\uFFFDbinary" }]);
    t.false("statusCode" in (attempts[0] ?? {}), "absent fields stay absent");
    t.deepEqual(await notifications.listAttempts(newId("ntf")), []);
  });
}
