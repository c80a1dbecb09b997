import { rm } from "node:fs/promises";
import test from "ava";
import { newId } from "../../src/domain/ids.js";
import type { Subscription } from "../../src/domain/model.js";
import type { Store, SubscriptionStore } from "../../src/domain/ports.js";
import { FanOutCache } from "../../src/store/fan-out-cache.js";
import { STABLE_PLANS } from "../../src/store/open-store.js";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { createPostgresStore } from "../../src/store/postgres/postgres-store.js";
import { migrate } from "../../src/store/postgres/schema.js";
import { embeddedDataDir } from "../helpers/stores.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

// One embedded database for the file; each test has its own clients.
let pool: EmbeddedPool | undefined;
let dir = "";
const ready = (async () => {
  dir = await embeddedDataDir("wh-fan-out-");
  pool = await EmbeddedPool.open(dir, STABLE_PLANS, () => {});
  await migrate(pool);
  return createPostgresStore(pool);
})();
ready.catch(() => {});
test.after.always(async () => {
  await pool?.end();
  await rm(dir, { recursive: true, force: true });
});

/** A client, the tables (written behind the cache's back) and a cache over them. */
async function setUp(options?: { limit?: number; keepEmpty?: boolean }): Promise<{ tables: Store; cache: FanOutCache; clientId: string }> {
  const tables = await ready;
  const client = await tables.clients.ensureWithKey("fan-out", newId("cli"));
  return { tables, cache: new FanOutCache(tables.subscriptions, options), clientId: client.id };
}

const ids = (subscriptions: readonly Subscription[]) => subscriptions.map((s) => s.id);

test("a second publish of an event finds its subscribers without the database: a write behind the cache's back is not seen", async (t) => {
  const { tables, cache, clientId } = await setUp();
  const first = subscriptionRecord(clientId);
  await cache.insert(first);
  const answer = await cache.listEnabledForEvent(clientId, "Order.Created");
  t.deepEqual(ids(answer), [first.id]);
  // Only one process may write an embedded database: this is what the cache relies on.
  await tables.subscriptions.insert(subscriptionRecord(clientId));
  t.is(await cache.listEnabledForEvent(clientId, "Order.Created"), answer, "the same answer, kept");
  t.true(Object.isFrozen(answer) && answer.every((s) => Object.isFrozen(s)), "shared answers can't be changed by a caller");
});

test("a fresh read sees a write made behind the cache's back, and is the answer kept from then on", async (t) => {
  const { tables, cache, clientId } = await setUp();
  const first = subscriptionRecord(clientId, { createdAt: new Date(1_000) });
  await cache.insert(first);
  await cache.listEnabledForEvent(clientId, "Order.Created");
  const second = subscriptionRecord(clientId, { createdAt: new Date(2_000) });
  await tables.subscriptions.insert(second);
  const fresh = await cache.listEnabledForEvent(clientId, "Order.Created", { fresh: true });
  t.deepEqual(ids(fresh), [first.id, second.id]);
  t.is(await cache.listEnabledForEvent(clientId, "Order.Created"), fresh);
});

test("a fresh answer that is not kept drops the older one: the next publish reads again", async (t) => {
  const { tables, cache, clientId } = await setUp({ keepEmpty: false });
  const only = subscriptionRecord(clientId);
  await cache.insert(only);
  t.deepEqual(ids(await cache.listEnabledForEvent(clientId, "Order.Created")), [only.id]);
  await tables.subscriptions.disable(only.id, "disabled elsewhere", new Date());
  t.deepEqual(ids(await cache.listEnabledForEvent(clientId, "Order.Created", { fresh: true })), [], "empty: not kept");
  const added = subscriptionRecord(clientId);
  await tables.subscriptions.insert(added);
  t.deepEqual(ids(await cache.listEnabledForEvent(clientId, "Order.Created")), [added.id], "not the stale answer");
});

test("with keepEmpty false, an event nobody subscribes to is read at every publish, so a subscription made elsewhere is found", async (t) => {
  const { tables, cache, clientId } = await setUp({ keepEmpty: false });
  t.deepEqual(ids(await cache.listEnabledForEvent(clientId, "Order.Created")), []);
  const elsewhere = subscriptionRecord(clientId);
  await tables.subscriptions.insert(elsewhere);
  t.deepEqual(ids(await cache.listEnabledForEvent(clientId, "Order.Created")), [elsewhere.id]);
});

test("every write through the cache is seen by the next publish", async (t) => {
  const { cache, clientId } = await setUp();
  const created = () => cache.listEnabledForEvent(clientId, "Order.Created");
  const a = subscriptionRecord(clientId, { createdAt: new Date(1_000) });
  const b = subscriptionRecord(clientId, { createdAt: new Date(2_000) });
  t.deepEqual(ids(await created()), []);
  await cache.insert(a);
  await cache.insert(b);
  t.deepEqual(ids(await created()), [a.id, b.id], "insert");

  const moved = { ...a, url: "https://receiver.example/moved", updatedAt: new Date(3_000) };
  t.true(await cache.update(moved, a.updatedAt));
  t.is((await created())[0]?.url, moved.url, "update");

  t.deepEqual(await cache.markFailing(a.id, new Date(4_000)), new Date(4_000));
  t.deepEqual((await created())[0]?.failingSince, new Date(4_000), "a failure streak begins");
  await cache.markHealthy(a.id);
  t.is((await created())[0]?.failingSince, undefined, "and ends");

  await cache.disable(a.id, "failing", new Date(5_000));
  t.deepEqual(ids(await created()), [b.id], "disable");
  t.true(await cache.delete(b.id));
  t.deepEqual(ids(await created()), [], "delete");
});

test("a write to one client leaves the other clients' answers kept", async (t) => {
  const { tables, cache, clientId } = await setUp();
  const other = (await tables.clients.ensureWithKey("fan-out-other", newId("cli"))).id;
  await cache.insert(subscriptionRecord(other));
  const theirs = await cache.listEnabledForEvent(other, "Order.Created");
  await cache.insert(subscriptionRecord(clientId));
  t.is(await cache.listEnabledForEvent(other, "Order.Created"), theirs);
  t.is((await cache.listEnabledForEvent(clientId, "Order.Created")).length, 1);
});

test("a publish read while a write finished is answered but not kept: it may predate the write", async (t) => {
  const { tables, clientId } = await setUp();
  const s = subscriptionRecord(clientId);
  await tables.subscriptions.insert(s);
  // The tables, with the publish's read held, once made, until the test lets it go.
  let made: () => void = () => {};
  const madeRead = new Promise<void>((resolve) => {
    made = resolve;
  });
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const gated: SubscriptionStore = Object.create(tables.subscriptions, {
    listEnabledForEvent: {
      value: async (client: string, event: string) => {
        const answer = await tables.subscriptions.listEnabledForEvent(client, event);
        made();
        await held;
        return answer;
      },
    },
  });
  const cache = new FanOutCache(gated);
  const reading = cache.listEnabledForEvent(clientId, "Order.Created");
  await madeRead;
  // The subscription is unknown to the cache yet: the write is by id alone.
  await cache.disable(s.id, "failing", new Date());
  release();
  t.deepEqual(ids(await reading), [s.id], "the read as it was made");
  t.deepEqual(ids(await cache.listEnabledForEvent(clientId, "Order.Created")), [], "read again, after the write");
});

test("the least recently used answers go once the cache holds its limit", async (t) => {
  const { tables, cache, clientId } = await setUp({ limit: 2 });
  const events = ["Order.Created", "Order.Shipped", "Order.Cancelled"];
  for (const event of events) await cache.insert(subscriptionRecord(clientId, { event }));
  const created = await cache.listEnabledForEvent(clientId, "Order.Created");
  const shipped = await cache.listEnabledForEvent(clientId, "Order.Shipped");
  t.is(await cache.listEnabledForEvent(clientId, "Order.Created"), created, "used again: now the most recent");
  await cache.listEnabledForEvent(clientId, "Order.Cancelled");
  t.is(await cache.listEnabledForEvent(clientId, "Order.Created"), created);
  // Written behind the cache's back: only an answer read anew sees it.
  await tables.subscriptions.insert(subscriptionRecord(clientId, { event: "Order.Shipped" }));
  const again = await cache.listEnabledForEvent(clientId, "Order.Shipped");
  t.not(again, shipped);
  t.is(again.length, 2);
});

test("two publishes of one event that miss together keep one answer and evict nothing else", async (t) => {
  const { cache, clientId } = await setUp({ limit: 2 });
  for (const event of ["Order.Created", "Order.Shipped"]) await cache.insert(subscriptionRecord(clientId, { event }));
  const created = await cache.listEnabledForEvent(clientId, "Order.Created");
  const [first, second] = await Promise.all([
    cache.listEnabledForEvent(clientId, "Order.Shipped"),
    cache.listEnabledForEvent(clientId, "Order.Shipped"),
  ]);
  t.deepEqual(ids(first), ids(second));
  t.is(await cache.listEnabledForEvent(clientId, "Order.Created"), created);
  t.is(await cache.listEnabledForEvent(clientId, "Order.Shipped"), second, "the later answer is the one kept");
});
