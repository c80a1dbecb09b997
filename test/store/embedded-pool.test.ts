import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import pg from "pg";
import { EmbeddedPool } from "../../src/store/postgres/embedded-pool.js";
import { EmbeddedThread } from "../../src/store/postgres/embedded-thread.js";
import { embeddedDataDir } from "../helpers/stores.js";

async function open(t: import("ava").ExecutionContext): Promise<EmbeddedPool> {
  const dir = await embeddedDataDir("wh-embedded-");
  const pool = await EmbeddedPool.open(dir, ["enable_seqscan=off"], (error) => t.fail(`embedded database failed: ${error.message}`));
  t.teardown(async () => {
    await pool.end();
    await rm(dir, { recursive: true, force: true });
  });
  await pool.query("CREATE TABLE items (id text PRIMARY KEY, n int NOT NULL)");
  return pool;
}

test("a refused statement leaves the embedded session working, prepared statements included", async (t) => {
  const pool = await open(t);
  const insert = { name: "insert-item", text: "INSERT INTO items VALUES ($1, $2) RETURNING n" };
  t.deepEqual((await pool.query({ ...insert, values: ["a", 1] })).rows, [{ n: 1 }]);
  const results = await Promise.allSettled([
    pool.query({ ...insert, values: ["a", 2] }),
    pool.query({ ...insert, values: ["b", 2] }),
    pool.query("SELECT 1 / 0"),
    pool.query({ ...insert, values: ["c", 3] }),
  ]);
  t.deepEqual(
    results.map((r) => r.status),
    ["rejected", "fulfilled", "rejected", "fulfilled"],
  );
  t.is((results[0] as PromiseRejectedResult).reason.code, "23505");
  // Many more, with the same named statement: no "already exists", no dropped connection.
  for (let i = 0; i < 50; i++) await pool.query({ ...insert, values: [`x${i}`, i] });
  t.is((await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM items")).rows[0]?.n, 53);
  t.is((await pool.query<{ enable_seqscan: string }>("SHOW enable_seqscan")).rows[0]?.enable_seqscan, "off", "session settings hold");
});

test("a transaction has the session to itself: statements from elsewhere wait for its end", async (t) => {
  const pool = await open(t);
  const client = await pool.connect();
  await client.query("BEGIN");
  await client.query("INSERT INTO items VALUES ('inside', 1)");
  let outsideDone = false;
  const outside = pool.query("INSERT INTO items VALUES ('outside', 2)").then(() => {
    outsideDone = true;
  });
  await client.query("SELECT pg_sleep(0.05)");
  t.false(outsideDone, "waits while the transaction is open");
  await client.query("ROLLBACK");
  client.release();
  client.release(); // twice is harmless
  await outside;
  t.deepEqual((await pool.query<{ id: string }>("SELECT id FROM items ORDER BY id")).rows, [{ id: "outside" }]);
});

test("closing waits for statements under way and refuses later ones with a clear error", async (t) => {
  const dir = await embeddedDataDir("wh-embedded-");
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pool = await EmbeddedPool.open(dir, [], () => {});
  const running = pool.query("SELECT 1 AS one");
  await pool.end();
  t.deepEqual((await running).rows, [{ one: 1 }]);
  await t.throwsAsync(pool.query("SELECT 1"), { message: /embedded database is closed/ });
  await t.throwsAsync(pool.connect(), { message: /embedded database is closed/ });
});

test("a client released as broken has what it left open rolled back before the next turn", async (t) => {
  const pool = await open(t);
  const client = await pool.connect();
  await client.query("BEGIN");
  await client.query("INSERT INTO items VALUES ('half-done', 1)");
  client.release(new Error("its holder gave up mid-transaction"));
  await pool.query("INSERT INTO items VALUES ('next', 2)");
  t.deepEqual((await pool.query<{ id: string }>("SELECT id FROM items ORDER BY id")).rows, [{ id: "next" }]);
});

test("with vacuumEveryMs, a table whose rows come and go reuses its space instead of growing by every row it held", async (t) => {
  const dir = await embeddedDataDir("wh-embedded-");
  const pool = await EmbeddedPool.open(dir, [], (error) => t.fail(`embedded database failed: ${error.message}`), { vacuumEveryMs: 50 });
  t.teardown(async () => {
    await pool.end();
    await rm(dir, { recursive: true, force: true });
  });
  await pool.query("CREATE TABLE jobs (id text PRIMARY KEY, locked_at timestamptz, body text)");
  const size = async () => (await pool.query<{ bytes: number }>("SELECT pg_relation_size('jobs')::int AS bytes")).rows[0]?.bytes ?? 0;
  const vacuumed = async () =>
    (await pool.query<{ n: number }>("SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relname = 'jobs'")).rows[0]?.n ?? 0;
  // As the delivery jobs do: each row inserted, updated (locked), deleted.
  const churn = async (round: number) => {
    const ids = Array.from({ length: 500 }, (_, i) => `${round}-${i}`);
    await pool.query("INSERT INTO jobs SELECT id, NULL, repeat('x', 100) FROM unnest($1::text[]) AS id", [ids]);
    await pool.query("UPDATE jobs SET locked_at = now() WHERE id = ANY($1)", [ids]);
    await pool.query("DELETE FROM jobs WHERE id = ANY($1)", [ids]);
  };
  const waitForVacuum = async () => {
    const before = await vacuumed();
    while ((await vacuumed()) === before) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  await churn(0);
  await waitForVacuum();
  const settled = await size();
  for (let round = 1; round <= 20; round++) {
    await churn(round);
    if (round % 5 === 0) await waitForVacuum();
  }
  await waitForVacuum();
  // Without VACUUM the 10,000 rows would leave ~3 MB behind (PGlite has no autovacuum).
  t.true((await size()) <= Math.max(settled, 8192) * 4, `${await size()} bytes after 10,000 rows came and went (${settled} after 500)`);
});

test("PostgreSQL's work runs on the database's own thread: the event loop keeps turning while a statement runs", async (t) => {
  const pool = await open(t);
  let last = performance.now();
  let longestGap = 0;
  let running = true;
  const turn = () => {
    const now = performance.now();
    longestGap = Math.max(longestGap, now - last);
    last = now;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  const started = performance.now();
  await pool.query("SELECT pg_sleep(0.5)");
  const took = performance.now() - started;
  running = false;
  t.true(took >= 450, `the statement took ${Math.round(took)} ms`);
  // On the event loop's own thread the loop would stand still for the whole statement.
  t.true(
    longestGap < took / 2,
    `the event loop stood still for at most ${Math.round(longestGap)} ms of the statement's ${Math.round(took)} ms`,
  );
});

test("a database that cannot be opened is refused with the reason", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "wh-embedded-bad-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, "pglite"));
  await writeFile(join(dir, "pglite", "stray"), "not a database");
  await t.throwsAsync(
    EmbeddedPool.open(dir, [], () => {}),
    { message: /holds files but no database/ },
  );
});

test("the database's thread giving up is a lost connection to its client; closing still closes the database, twice over", async (t) => {
  const dir = await embeddedDataDir("wh-embedded-");
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const thread = await EmbeddedThread.start(join(dir, "pglite"));
  const client = new pg.Client({ stream: () => thread.socket, user: "postgres", database: "postgres" });
  // pg reports the loss, then that the connection ended: both go to its listener.
  const lost = new Promise<Error>((resolve) => client.on("error", resolve));
  await client.connect();
  t.deepEqual((await client.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
  // Bytes no client would write: a message whose length is shorter than its own header.
  thread.socket.write(Buffer.from([0x51, 0, 0, 0, 2]));
  t.regex((await lost).message, /declares 3 bytes/);
  await t.throwsAsync(client.query("SELECT 1"));
  await thread.close();
  await thread.close();
  // The database was closed properly: it opens again.
  const again = await EmbeddedPool.open(dir, [], (error) => t.fail(`embedded database failed: ${error.message}`));
  t.deepEqual((await again.query("SELECT 2 AS two")).rows, [{ two: 2 }]);
  await again.end();
});

test("bookkeeping commits without waiting for the disk, the API's side waits, and a clean close keeps both", async (t) => {
  const dir = await embeddedDataDir("wh-embedded-");
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pool = await EmbeddedPool.open(dir, [], (error) => t.fail(`embedded database failed: ${error.message}`));
  const setting = async (side: Pick<EmbeddedPool, "query">) =>
    (await side.query<{ synchronous_commit: string }>("SHOW synchronous_commit")).rows[0]?.synchronous_commit;
  await pool.query("CREATE TABLE items (id text PRIMARY KEY)");
  // Turns interleaved, statements and transactions: each runs with its own side's setting.
  const [api, bookkeeping, inTransaction] = await Promise.all([
    setting(pool),
    setting(pool.bookkeeping),
    pool.bookkeeping.connect().then(async (client) => {
      await client.query("BEGIN");
      await client.query("INSERT INTO items VALUES ('in a transaction')");
      const inside = await setting(client);
      await client.query("COMMIT");
      client.release();
      return inside;
    }),
    pool.bookkeeping.query("INSERT INTO items VALUES ('bookkeeping')"),
  ]);
  t.deepEqual([api, bookkeeping, inTransaction], ["on", "off", "off"]);
  t.is(await setting(pool), "on");
  await pool.end();
  const reopened = await EmbeddedPool.open(dir, [], (error) => t.fail(`embedded database failed: ${error.message}`));
  t.teardown(() => reopened.end());
  t.deepEqual((await reopened.query<{ id: string }>("SELECT id FROM items ORDER BY id")).rows, [
    { id: "bookkeeping" },
    { id: "in a transaction" },
  ]);
});
