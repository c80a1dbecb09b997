import { randomBytes } from "node:crypto";
import test, { type ExecutionContext } from "ava";
import pg from "pg";
import { PostgresSeenStore } from "../../packages/receiver/src/index.js";
import { createClient } from "../helpers/admin.js";
import { type ReceivedRequest, Receiver } from "../helpers/receiver.js";
import { replay, startSdkReceiver } from "../helpers/sdk-receiver.js";
import { rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const BASE = "/api/webhookSubscription";

const postgresUrl = process.env.POSTGRES_URL;
if (!postgresUrl) {
  // PGlite is no stand-in here: opening it blocks this process — the service's too — for seconds,
  // which breaks the service's keep-alive connections. test/receiver/seen-store.test.ts runs the
  // store itself, a second instance included, on PGlite.
  console.warn("!!! POSTGRES_URL is not set: the receiver restart and shared seen-store tests on PostgreSQL are SKIPPED");
}
const pgTest = postgresUrl ? test : test.skip;

/**
 * A schema of its own for one test's seen-store table, and connections to it:
 * each is what one receiver process would hold, ended on its restart.
 */
async function freshSchema(t: ExecutionContext) {
  const schema = `rcv_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Pool({ connectionString: postgresUrl, max: 1 });
  await admin.query(`CREATE SCHEMA ${schema}`);
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  });
  return {
    table: `${schema}.webhook_receiver_jobs`,
    async connect() {
      const pool = new pg.Pool({ connectionString: postgresUrl, max: 10 });
      return { client: pool, close: () => pool.end() };
    },
  };
}

pgTest("postgres: two receiver instances on one seen-store run the handler once for 50 concurrent replays", async (t) => {
  const database = await freshSchema(t);
  const { delivery, key } = await capture();
  const instances = await Promise.all(
    [0, 1].map(async () => {
      const connection = await database.connect();
      const seen = new PostgresSeenStore(connection.client, { table: database.table });
      await seen.ensureTable();
      const receiver = await startSdkReceiver("http", { keys: [key], seen });
      t.teardown(async () => {
        await receiver.close();
        await connection.close();
      });
      return receiver;
    }),
  );
  const answers = await Promise.all(Array.from({ length: 50 }, (_, index) => replay(instances[index % 2]?.url as string, delivery)));
  t.is(
    instances.reduce((calls, instance) => calls + instance.calls.length, 0),
    1,
  );
  t.is(answers.filter((answer) => answer.json.status === "processed").length, 1);
  t.true(answers.every((answer) => answer.status === 200 || answer.status === 409));
});

pgTest("postgres: a job stays processed across a receiver restart; a failed handler's job waits for the service's retry", async (t) => {
  const database = await freshSchema(t);
  const owner = await createClient(running.baseUrl, "restart");
  let keys: string[] = [];
  let failures = 1;
  const start = async (port?: number) => {
    const connection = await database.connect();
    const seen = new PostgresSeenStore(connection.client, { table: database.table });
    await seen.ensureTable();
    const receiver = await startSdkReceiver("http", {
      keys: () => keys,
      seen,
      ...(port ? { port } : {}),
      onNotification: () => {
        if (failures-- > 0) throw new Error("the handler's database is down");
      },
    });
    let stopped = false;
    return {
      receiver,
      async stop() {
        if (stopped) return;
        stopped = true;
        await receiver.close();
        await connection.close();
      },
    };
  };

  const first = await start();
  t.teardown(() => first.stop());
  const created = await rest(running.baseUrl, "POST", BASE, { event: "Order.Shipped", url: first.receiver.url }, owner.auth);
  keys = [created.json.signatureKey as string];
  const sample = { event: "Order.Shipped", url: first.receiver.url };
  const job = (await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, sample, owner.auth)).json.jobId as string;
  await first.receiver.waitUntil(() => first.receiver.calls.length >= 2, "the retry after the failed handler");
  t.deepEqual(
    first.receiver.calls.map((call) => [call.jobId, call.attempt]),
    [
      [job, 0],
      [job, 1],
    ],
  );
  t.deepEqual(
    first.receiver.errors.map((error) => error.context.stage),
    ["handler"],
  );
  await first.receiver.waitUntil(() => first.receiver.requests.length >= 2, "both attempts recorded");
  const attempts = [...first.receiver.requests];
  await first.stop();

  const second = await start(first.receiver.port);
  t.teardown(() => second.stop());
  for (const attempt of attempts) {
    t.deepEqual(await replay(second.receiver.url, attempt), { status: 200, json: { status: "duplicate", jobId: job } });
  }
  const burst = await Promise.all(Array.from({ length: 50 }, () => replay(second.receiver.url, attempts[0] as ReceivedRequest)));
  t.true(burst.every((answer) => answer.status === 200 && answer.json.status === "duplicate"));
  t.is(second.receiver.calls.length, 0, "the restarted receiver never ran the processed job");

  const next = (await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, sample, owner.auth)).json.jobId as string;
  await second.receiver.waitUntil(() => second.receiver.calls.length >= 1, "a new job after the restart");
  t.is(second.receiver.calls[0]?.jobId, next);
});

/** A real delivery nobody processed yet, captured raw, and its key. */
async function capture(): Promise<{ delivery: ReceivedRequest; key: string }> {
  const owner = await createClient(running.baseUrl, "Capture");
  const raw = await Receiver.start();
  try {
    const created = await rest(running.baseUrl, "POST", BASE, { event: "Invoice.Issued", url: raw.url }, owner.auth);
    await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, { event: "Invoice.Issued", url: raw.url }, owner.auth);
    const [delivery] = await raw.waitFor(1);
    return { delivery: delivery as ReceivedRequest, key: created.json.signatureKey as string };
  } finally {
    await raw.close();
  }
}
