import { randomBytes } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import test from "ava";
import pg from "pg";
import { MemorySeenStore, PostgresSeenStore, type SeenStore, seenTableDdl } from "../../packages/receiver/src/index.js";

/** A fresh, private seen-store of one kind, and how to open a second instance on the same data (a restart). */
interface StoreTarget {
  name: string;
  create(): Promise<{ store: SeenStore; reopen?: () => Promise<SeenStore>; cleanup(): Promise<void> }>;
}

const memoryTarget: StoreTarget = {
  name: "memory",
  async create() {
    return { store: new MemorySeenStore(), cleanup: async () => {} };
  },
};

/** One embedded database for the file (starting PGlite costs seconds), a table of its own per test. */
let pglite: PGlite | undefined;
test.after.always(() => pglite?.close());

const pgliteTarget: StoreTarget = {
  name: "pglite",
  async create() {
    pglite ??= new PGlite();
    const db = pglite;
    const table = `seen_${randomBytes(6).toString("hex")}`;
    const store = new PostgresSeenStore(db, { table });
    await store.ensureTable();
    return { store, reopen: async () => new PostgresSeenStore(db, { table }), cleanup: async () => {} };
  },
};

/** A schema of its own per test on the PostgreSQL server, dropped afterwards. */
function postgresTarget(url: string): StoreTarget {
  return {
    name: "postgres",
    async create() {
      const schema = `rcv_${randomBytes(6).toString("hex")}`;
      const pools = [new pg.Pool({ connectionString: url, max: 8 })];
      await pools[0]?.query(`CREATE SCHEMA ${schema}`);
      const store = new PostgresSeenStore(pools[0] as pg.Pool, { table: `${schema}.seen_jobs` });
      await store.ensureTable();
      return {
        store,
        async reopen() {
          const pool = new pg.Pool({ connectionString: url, max: 8 });
          pools.push(pool);
          return new PostgresSeenStore(pool, { table: `${schema}.seen_jobs` });
        },
        async cleanup() {
          await pools[0]?.query(`DROP SCHEMA ${schema} CASCADE`);
          await Promise.all(pools.map((pool) => pool.end()));
        },
      };
    },
  };
}

const postgresUrl = process.env.POSTGRES_URL;
if (!postgresUrl) console.warn("!!! POSTGRES_URL is not set: the PostgreSQL seen-store runs are SKIPPED (memory and PGlite only)");
const targets = [memoryTarget, pgliteTarget, ...(postgresUrl ? [postgresTarget(postgresUrl)] : [])];

const LEASE = 60_000;

for (const target of targets) {
  const setUp = async (t: import("ava").ExecutionContext) => {
    const created = await target.create();
    t.teardown(() => created.cleanup());
    return created;
  };

  test(`${target.name}: claim, then a duplicate is in progress, then done once committed`, async (t) => {
    const { store } = await setUp(t);
    const claim = await store.claim("ntf_a", LEASE);
    t.is(claim.state, "claimed");
    t.deepEqual(await store.claim("ntf_a", LEASE), { state: "in_progress" });
    t.is((await store.claim("ntf_b", LEASE)).state, "claimed", "jobs are independent");
    if (claim.state !== "claimed") return;
    await store.commit("ntf_a", claim.token);
    t.deepEqual(await store.claim("ntf_a", LEASE), { state: "done" });
    t.deepEqual(await store.claim("ntf_a", LEASE), { state: "done" });
  });

  test(`${target.name}: a released claim (failed handler) leaves the job unseen for the next attempt`, async (t) => {
    const { store } = await setUp(t);
    const first = await store.claim("ntf_a", LEASE);
    if (first.state !== "claimed") return t.fail(first.state);
    await store.release("ntf_a", first.token);
    const second = await store.claim("ntf_a", LEASE);
    t.is(second.state, "claimed");
    if (second.state !== "claimed") return;
    t.not(second.token, first.token);
    await store.release("ntf_a", first.token);
    t.deepEqual(await store.claim("ntf_a", LEASE), { state: "in_progress" }, "a stale token releases nothing");
  });

  test(`${target.name}: of 50 concurrent claims of one job exactly one wins`, async (t) => {
    const { store } = await setUp(t);
    const claims = await Promise.all(Array.from({ length: 50 }, () => store.claim("ntf_hot", LEASE)));
    t.is(claims.filter((claim) => claim.state === "claimed").length, 1);
    t.is(claims.filter((claim) => claim.state === "in_progress").length, 49);
  });

  test(`${target.name}: a lapsed claim (crashed handler) is taken over; whoever commits, the job is done`, async (t) => {
    const { store } = await setUp(t);
    const crashed = await store.claim("ntf_a", 0);
    if (crashed.state !== "claimed") return t.fail(crashed.state);
    const takeover = await store.claim("ntf_a", LEASE);
    if (takeover.state !== "claimed") return t.fail(takeover.state);
    t.not(takeover.token, crashed.token);
    await store.commit("ntf_a", crashed.token);
    await store.release("ntf_a", takeover.token);
    t.deepEqual(await store.claim("ntf_a", LEASE), { state: "done" }, "a release after the commit does not unsee it");
  });

  if (target === memoryTarget) continue; // a MemorySeenStore forgets on restart, by design
  test(`${target.name}: a committed job stays done for a second instance on the same data (a restart)`, async (t) => {
    const { store, reopen } = await setUp(t);
    if (!reopen) return t.fail("the target has no second instance");
    const claim = await store.claim("ntf_a", LEASE);
    if (claim.state !== "claimed") return t.fail(claim.state);
    await store.commit("ntf_a", claim.token);
    const held = await store.claim("ntf_b", LEASE);
    const restarted = await reopen();
    t.deepEqual(await restarted.claim("ntf_a", LEASE), { state: "done" });
    t.deepEqual(await restarted.claim("ntf_b", LEASE), { state: "in_progress" }, "another instance's live claim holds");
    t.is(held.state, "claimed");
  });
}

for (const target of targets.filter((candidate) => candidate.name !== "memory")) {
  test(`${target.name}: prune forgets processed jobs older than asked, never claims`, async (t) => {
    const created = await target.create();
    t.teardown(() => created.cleanup());
    const store = created.store as PostgresSeenStore;
    await store.ensureTable();
    const done = await store.claim("ntf_done", LEASE);
    if (done.state !== "claimed") return t.fail(done.state);
    await store.commit("ntf_done", done.token);
    await store.claim("ntf_busy", LEASE);
    t.is(await store.prune(3_600_000), 0, "nothing is an hour old");
    t.is(await store.prune(0), 1);
    t.is((await store.claim("ntf_done", LEASE)).state, "claimed", "a pruned job is unseen");
    t.is((await store.claim("ntf_busy", LEASE)).state, "in_progress");
  });
}

test("postgres: the table name is an identifier or schema.identifier, quoted, never raw SQL", (t) => {
  t.regex(seenTableDdl("webhooks.receiver_jobs"), /CREATE TABLE IF NOT EXISTS "webhooks"."receiver_jobs" \(/);
  for (const table of ["jobs; DROP TABLE x", "a.b.c", 'we"ird', ""]) {
    t.throws(() => new PostgresSeenStore({ query: async () => ({ rows: [] }) }, { table }), { instanceOf: TypeError });
  }
});

test("memory: a processed job is forgotten after its TTL", async (t) => {
  let now = 0;
  const store = new MemorySeenStore({ ttlMs: 1_000, now: () => now });
  const claim = await store.claim("ntf_a", LEASE);
  if (claim.state !== "claimed") return t.fail(claim.state);
  await store.commit("ntf_a", claim.token);
  now = 999;
  t.is((await store.claim("ntf_a", LEASE)).state, "done");
  now = 1_000;
  t.is((await store.claim("ntf_a", LEASE)).state, "claimed");
});

test("memory: a claim lapses at its lease's end, not before", async (t) => {
  let now = 0;
  const store = new MemorySeenStore({ now: () => now });
  await store.claim("ntf_a", 500);
  now = 499;
  t.is((await store.claim("ntf_a", 500)).state, "in_progress");
  now = 500;
  t.is((await store.claim("ntf_a", 500)).state, "claimed");
});

test("memory: past maxEntries the least recently seen processed job goes first, a live claim never", async (t) => {
  const store = new MemorySeenStore({ maxEntries: 3 });
  const commit = async (key: string) => {
    const claim = await store.claim(key, LEASE);
    if (claim.state === "claimed") await store.commit(key, claim.token);
  };
  await store.claim("busy", LEASE);
  await commit("old");
  await commit("recent");
  t.is((await store.claim("old", LEASE)).state, "done", "seeing a duplicate makes it recent");
  await commit("new");
  t.is(store.size, 3);
  t.is((await store.claim("busy", LEASE)).state, "in_progress", "the oldest entry, but claimed: kept");
  t.is((await store.claim("old", LEASE)).state, "done");
  t.is((await store.claim("new", LEASE)).state, "done");
  t.is((await store.claim("recent", LEASE)).state, "claimed", "the least recently seen processed job was evicted");
});
