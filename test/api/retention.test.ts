import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { eventually } from "../helpers/eventually.js";
import { sampleOf, scrape } from "../helpers/metrics.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, startTestService } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";

const BASE = "/api/webhookSubscription";
const DELETED = "webhook_retention_deleted_rows_total";

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: ended notifications past their client's retention go with their attempts; pending ones stay`,
    async (t) => {
      const store = await target.create();
      // Retries an hour apart: a failed attempt leaves its notification pending for the whole test.
      const running = await startTestService({ ...store.env, RETENTION: "2s", RETRY_SCHEDULE: "1h" });
      const ok = await Receiver.start();
      const gone = await Receiver.start(() => ({ status: 410 }));
      const failing = await Receiver.start(() => ({ status: 500 }));
      t.teardown(async () => {
        await running.service.stop();
        await Promise.all([ok.close(), gone.close(), failing.close()]);
        await store.cleanup();
      });
      const base = running.baseUrl;
      const job = (id: string) => rest(base, "GET", `/api/internal/jobs/${id}`, undefined, adminAuth);
      const statusOf = async (id: string) => ((await job(id)).json.notification as { status?: string } | undefined)?.status;
      const publish = async (clientId: string, event: string) => {
        const published = await rest(base, "POST", "/api/internal/events/publish", { clientId, event, payload: {} }, adminAuth);
        t.is(published.status, 200, published.text);
        return published.json.jobIds as string[];
      };

      for (const name of ["Retention.Delivered", "Retention.Gone", "Retention.Failing", "Retention.Orphaned"]) {
        t.is((await rest(base, "POST", "/api/internal/eventTypes", { name, description: "a test event" }, adminAuth)).status, 200);
      }
      const plain = await createClient(base, "Retention default");
      const keeper = await rest(base, "POST", "/api/internal/clients", { name: "Keeps a day", retention: "86400s" }, adminAuth);
      t.is(keeper.status, 200, keeper.text);
      const keeperClient = keeper.json.client as { id: string; retention?: string };
      t.is(keeperClient.retention, "86400s", "the client shows its own retention");
      const keeperAuth = { authorization: `Bearer ${(keeper.json.apiKey as { key: string }).key}` };

      for (const [event, url] of [
        ["Retention.Delivered", ok.url],
        ["Retention.Gone", gone.url],
        ["Retention.Failing", failing.url],
      ] as const) {
        t.is((await rest(base, "POST", BASE, { event, url }, plain.auth)).status, 200);
      }
      const doomed = await rest(base, "POST", BASE, { event: "Retention.Orphaned", url: failing.url }, plain.auth);
      t.is((await rest(base, "POST", BASE, { event: "Retention.Delivered", url: ok.url }, keeperAuth)).status, 200);

      const [delivered] = (await publish(plain.id, "Retention.Delivered")) as [string];
      const [failed] = (await publish(plain.id, "Retention.Gone")) as [string];
      const [pending] = (await publish(plain.id, "Retention.Failing")) as [string];
      const [orphaned] = (await publish(plain.id, "Retention.Orphaned")) as [string];
      const [kept] = (await publish(keeperClient.id, "Retention.Delivered")) as [string];
      await eventually("the delivery", async () => (await statusOf(delivered)) === "NOTIFICATION_STATUS_DELIVERED");
      await eventually("the 410 to fail it", async () => (await statusOf(failed)) === "NOTIFICATION_STATUS_FAILED");
      await eventually(
        "an attempt",
        async () => ((await job(pending)).json.notification as { attempts?: unknown[] }).attempts?.length === 1,
      );
      await eventually("the keeper's delivery", async () => (await statusOf(kept)) === "NOTIFICATION_STATUS_DELIVERED");
      await eventually("the doomed subscription's attempt", async () => failing.requests.length === 2);
      // Its subscription deleted while its retry waits: failed, and its job still to run out.
      t.is((await rest(base, "DELETE", `${BASE}/${doomed.json.id as string}`, undefined, plain.auth)).status, 200);
      t.is(await statusOf(orphaned), "NOTIFICATION_STATUS_FAILED");

      await eventually("the purge", async () => (await job(delivered)).status === 404 && (await job(failed)).status === 404, {
        timeoutMs: 20_000,
      });
      const metrics = await scrape(base);
      t.true(sampleOf(metrics, DELETED, { table: "notifications" }) >= 2);
      t.true(sampleOf(metrics, DELETED, { table: "attempts" }) >= 2);
      t.true(sampleOf(metrics, "webhook_retention_oldest_notification_age_seconds") >= 1, "the pending one is the oldest kept");
      for (const id of [pending, orphaned, kept]) t.is((await job(id)).status, 200, `${id} is kept`);
      t.is(((await job(pending)).json.notification as { attempts: unknown[] }).attempts.length, 1, "with its attempts");

      // Back to the service's retention: the keeper's goes too.
      const cleared = await rest(base, "PATCH", `/api/internal/clients/${keeperClient.id}`, { retention: "0s" }, adminAuth);
      t.is(cleared.status, 200, cleared.text);
      t.is((cleared.json as { retention?: string }).retention, undefined);
      await eventually("the keeper's purge", async () => (await job(kept)).status === 404, { timeoutMs: 20_000 });
      t.is((await job(pending)).status, 200);
    },
  );
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: an idempotency key goes with its client's retention: a repeat after that is a new publish`,
    async (t) => {
      const store = await target.create();
      const running = await startTestService({ ...store.env, RETENTION: "2s" });
      const ok = await Receiver.start();
      t.teardown(async () => {
        await running.service.stop();
        await ok.close();
        await store.cleanup();
      });
      const base = running.baseUrl;
      t.is(
        (await rest(base, "POST", "/api/internal/eventTypes", { name: "Retention.Keyed", description: "a test event" }, adminAuth)).status,
        200,
      );
      const client = await createClient(base, "Keys kept 2 s");
      t.is((await rest(base, "POST", BASE, { event: "Retention.Keyed", url: ok.url }, client.auth)).status, 200);
      const publish = async () => {
        const body = { clientId: client.id, event: "Retention.Keyed", payload: {}, idempotencyKey: "order-1" };
        const published = await rest(base, "POST", "/api/internal/events/publish", body, adminAuth);
        t.is(published.status, 200, published.text);
        return published.json.jobIds as string[];
      };
      const keysPurged = async () => sampleOf(await scrape(base), DELETED, { table: "idempotency_keys" });

      const first = await publish();
      t.is(first.length, 1);
      t.deepEqual(await publish(), first, "a repeat within the retention is the first publish");
      await eventually("the key's purge", async () => (await keysPurged()) >= 1, { timeoutMs: 20_000 });
      const again = await publish();
      t.is(again.length, 1);
      t.notDeepEqual(again, first, "a repeat of the purged key is a new publish");
      await eventually("both deliveries", async () => ok.requests.length === 2);
    },
  );
}

test("a client's limits are set at creation and changed by the admin API, and bad ones are refused", async (t) => {
  const store = await storeTargets()[0]?.create();
  if (!store) throw new Error("no store target");
  const running = await startTestService(store.env);
  t.teardown(async () => {
    await running.service.stop();
    await store.cleanup();
  });
  const base = running.baseUrl;
  const created = await rest(
    base,
    "POST",
    "/api/internal/clients",
    { name: "Limited", retention: "604800s", maxSubscriptions: 5 },
    adminAuth,
  );
  t.is(created.status, 200, created.text);
  const { id } = created.json.client as { id: string };
  t.like(created.json.client, { retention: "604800s", maxSubscriptions: 5 });

  const patched = await rest(base, "PATCH", `/api/internal/clients/${id}`, { maxSubscriptions: 0 }, adminAuth);
  t.is(patched.status, 200, patched.text);
  t.like(patched.json, { id, retention: "604800s" });
  t.is(patched.json.maxSubscriptions ?? 0, 0, "0 returns it to the service's");
  const listed = await rest(base, "GET", "/api/internal/clients", undefined, adminAuth);
  t.like(
    (listed.json.clients as Array<{ id: string }>).find((c) => c.id === id),
    { retention: "604800s" },
  );

  for (const [body, field] of [
    [{ retention: "0.5s" }, /retention must be from 1s to 36500d/],
    [{ retention: "-60s" }, /retention must be from 1s/],
    [{ maxSubscriptions: -1 }, /max_subscriptions must be from 1 to 1000000/],
    [{ maxSubscriptions: 2_000_000 }, /max_subscriptions/],
  ] as const) {
    const refused = await rest(base, "PATCH", `/api/internal/clients/${id}`, body, adminAuth);
    t.is(refused.status, 400, JSON.stringify(body));
    t.regex(refused.json.message as string, field);
  }
  const refusedAtCreation = await rest(base, "POST", "/api/internal/clients", { name: "x", retention: "0.1s" }, adminAuth);
  t.is(refusedAtCreation.status, 400);
  t.is((await rest(base, "PATCH", "/api/internal/clients/cli_nope", { maxSubscriptions: 3 }, adminAuth)).status, 404);
  t.is((await rest(base, "PATCH", `/api/internal/clients/${id}`, { maxSubscriptions: 3 })).status, 401, "admins only");
});
