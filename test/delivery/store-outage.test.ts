import test, { type ExecutionContext } from "ava";
import pg from "pg";
import { startEmulator } from "../../tools/mongo-emulator/emulator.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { eventually } from "../helpers/eventually.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, startTestService } from "../helpers/service.js";
import { notOnMongo, storeTargets } from "../helpers/stores.js";

/**
 * One client subscribed to Order.Shipped at `receiver`: `publish(n)` calls
 * the publish endpoint, `accept` keeps the ids an answer accepted, and
 * `allDelivered` waits for each of them to reach the receiver.
 */
async function outageTraffic(t: ExecutionContext, baseUrl: string, receiver: Receiver) {
  const owner = await createClient(baseUrl, "Outage");
  const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Shipped", url: receiver.url }, owner.auth);
  t.is(created.status, 200, created.text);
  const publish = (n: number) =>
    rest(
      baseUrl,
      "POST",
      "/api/internal/events/publish",
      { clientId: owner.id, event: "Order.Shipped", payload: { OrderId: `o${n}` } },
      adminAuth,
    );
  const accepted = new Set<string>();
  const accept = (answer: Awaited<ReturnType<typeof publish>>) => {
    for (const id of answer.json.jobIds as string[]) accepted.add(id);
  };
  const allDelivered = (timeoutMs: number) => {
    const delivered = () => new Set(receiver.requests.filter((r) => r.status === 200).map((r) => r.headers["x-jobid"] as string));
    return eventually("every accepted notification to be delivered", () => [...accepted].every((id) => delivered().has(id)), { timeoutMs });
  };
  return { publish, accept, accepted, allDelivered };
}

const postgres = storeTargets().find((target) => target.name === "postgres");
notOnMongo(test, "the store's connections killed and refused under the scheduler");

if (postgres) {
  test("postgres: the store's connections killed and refused under the scheduler: health goes 503 with the reason, then back to 200 by itself; nothing accepted is lost", async (t) => {
    t.timeout(120_000);
    const store = await postgres.create();
    const database = new URL(store.env.DATABASE_URL as string).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.POSTGRES_URL });
    await admin.connect();
    const receiver = await Receiver.start(() => ({ status: 200, delayMs: 200 }));
    const { service, baseUrl } = await startTestService({ ...store.env, SCHEDULER_POLL_MS: "100", DELIVERY_TIMEOUT_MS: "1000" });
    t.teardown(async () => {
      await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`).catch(() => {});
      await service.stop();
      await admin.end();
      await receiver.close();
      await store.cleanup();
    });
    const { publish, accept, accepted, allDelivered } = await outageTraffic(t, baseUrl, receiver);
    for (let n = 0; n < 10; n++) accept(await publish(n));
    t.is((await rest(baseUrl, "GET", "/healthz")).status, 200);

    // The database goes away while deliveries are in flight: every connection is cut and none may open.
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [database]);
    let down: { status: number; json: Record<string, unknown> } = { status: 0, json: {} };
    await eventually(
      "/healthz to report the outage",
      async () => {
        down = await rest(baseUrl, "GET", "/healthz");
        return down.status === 503;
      },
      { timeoutMs: 15_000 },
    );
    t.is(down.json.status, "unavailable");
    t.regex(String(down.json.reason), /cannot reach its store/);
    t.is((await rest(baseUrl, "GET", "/livez")).status, 200, "alive all the same");
    const refused = await publish(100);
    t.is(refused.status, 503, refused.text);
    t.is(refused.json.code, "unavailable");

    // It comes back: health recovers by itself, and everything accepted before the outage is delivered.
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
    await eventually("/healthz to recover", async () => (await rest(baseUrl, "GET", "/healthz")).status === 200, { timeoutMs: 20_000 });
    for (let n = 10; n < 15; n++) accept(await publish(n));
    await allDelivered(60_000);
    t.is(accepted.size, 15);
  });
} else {
  test.skip("postgres: set POSTGRES_URL to kill the store's connections under the scheduler", () => {});
}

if (process.env.MONGODB_EMULATOR === "congodb") {
  // An emulator of its own, stopped and started again on the data it kept, as a mongod restarted.
  test("mongodb: the server stops with publishes in flight and starts again on its data: calls answer 503 and health says so, then back by itself; nothing accepted is lost", async (t) => {
    t.timeout(300_000);
    const emulator = await startEmulator();
    const receiver = await Receiver.start(() => ({ status: 200, delayMs: 200 }));
    const { service, baseUrl } = await startTestService({
      DATABASE_URL: `${emulator.url}/wh_outage`,
      SCHEDULER_POLL_MS: "100",
      DELIVERY_TIMEOUT_MS: "1000",
    });
    t.teardown(async () => {
      await emulator.start().catch(() => {});
      await service.stop();
      await receiver.close();
      await emulator.stop();
    });
    const { publish, accept, accepted, allDelivered } = await outageTraffic(t, baseUrl, receiver);
    for (let n = 0; n < 10; n++) accept(await publish(n));

    // The server goes away with publishes in flight: each is accepted (stored) or refused, none lost.
    const inFlight = Array.from({ length: 10 }, (_, n) => publish(100 + n));
    await emulator.stop();
    for (const answer of await Promise.all(inFlight)) {
      if (answer.status === 200) accept(answer);
      else t.is(answer.json.code, "unavailable", answer.text);
    }
    await eventually("/healthz to report the outage", async () => (await rest(baseUrl, "GET", "/healthz")).status === 503, {
      timeoutMs: 90_000,
    });
    t.is((await rest(baseUrl, "GET", "/livez")).status, 200, "alive all the same");
    // Refused once the driver gives up finding a server (10 s), not after its default 30 s.
    const asked = Date.now();
    const refused = await publish(200);
    t.true(Date.now() - asked < 20_000, `answered after ${Date.now() - asked} ms`);
    t.is(refused.status, 503, refused.text);
    t.is(refused.json.code, "unavailable");
    t.regex(String(refused.json.message), /the database is unreachable/);

    await emulator.start();
    await eventually("/healthz to recover", async () => (await rest(baseUrl, "GET", "/healthz")).status === 200, { timeoutMs: 90_000 });
    for (let n = 10; n < 15; n++) accept(await publish(n));
    await allDelivered(90_000);
    t.true(accepted.size >= 15);
  });
} else {
  test.skip("mongodb: the server stops and starts again: run under tools/mongo-emulator/run.ts (stops an emulator of its own)", () => {});
}
