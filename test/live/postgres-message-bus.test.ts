import test, { type ExecutionContext } from "ava";
import pg from "pg";
import { TOPICS } from "../../src/live/message-bus.js";
import { PostgresMessageBus } from "../../src/live/postgres-message-bus.js";
import { trackConnections } from "../../src/store/postgres/closing-pool.js";
import { postgresOnly, type StoreTarget } from "../helpers/stores.js";

const postgres = postgresOnly(test, "the PostgreSQL message bus");

/**
 * Two instances' buses on one new database, both started: `heard` collects
 * what the listener hears on the activity topic, and `hearing(n)` resolves
 * once it has heard n messages; `errors` what the buses report.
 */
async function twoBuses(t: ExecutionContext, target: StoreTarget) {
  const store = await target.create();
  const pools = [0, 1].map(() => new pg.Pool({ connectionString: store.env.DATABASE_URL, max: 4 }));
  // The database is dropped WITH (FORCE) at the end: a connection still closing then is terminated.
  for (const pool of pools) pool.on("error", () => {});
  const ends = pools.map(trackConnections);
  const errors: unknown[] = [];
  const [sender, listener] = pools.map((pool) => new PostgresMessageBus(pool, (error) => errors.push(error))) as [
    PostgresMessageBus,
    PostgresMessageBus,
  ];
  t.teardown(async () => {
    await sender.stop();
    await listener.stop();
    await Promise.all(ends.map((end) => end()));
    await store.cleanup();
  });
  const heard: string[] = [];
  const waiting: Array<{ count: number; resolve: () => void }> = [];
  await listener.start(
    (topic, payload) => {
      if (topic !== TOPICS.activity) return;
      heard.push(payload);
      for (const wait of waiting) if (heard.length === wait.count) wait.resolve();
    },
    () => {},
  );
  await sender.start(
    () => {},
    () => {},
  );
  const hearing = (count: number) => new Promise<void>((resolve) => waiting.push({ count, resolve }));
  return { sender, heard, hearing, errors };
}

if (postgres) {
  test("a listener hears one instance's messages in the order it sent them, however many go at once", async (t) => {
    const { sender, heard, hearing, errors } = await twoBuses(t, postgres);
    const sent = Array.from({ length: 300 }, (_, i) => String(i));
    const done = hearing(sent.length);
    // All at once, as the live feed sends them: none waits for the one before.
    await Promise.all(sent.map((payload) => sender.send(TOPICS.activity, payload)));
    await done;
    t.deepEqual(heard, sent);
    t.deepEqual(errors, []);
  });

  test("a message PostgreSQL refuses (8000 bytes or more) is lost alone, not with the others sent beside it", async (t) => {
    const { sender, heard, hearing, errors } = await twoBuses(t, postgres);
    const done = hearing(2);
    await Promise.all(["before", "é".repeat(4096), "after"].map((payload) => sender.send(TOPICS.activity, payload)));
    await done;
    t.deepEqual(heard, ["before", "after"]);
    t.is(errors.length, 1);
    t.regex(String(errors[0]), /payload string too long/);
  });
}
