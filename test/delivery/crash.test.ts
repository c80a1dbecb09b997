import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { kill, type ServiceProcess, spawnService } from "../helpers/process.js";
import { Receiver } from "../helpers/receiver.js";
import { rest } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const SUBSCRIPTIONS = 5;
const EVENTS = 60; // 300 notifications

for (const target of storeTargets()) {
  test.serial(`${target.name}: SIGKILL with hundreds of notifications in flight loses none`, async (t) => {
    t.timeout(180_000);
    const store = await target.create();
    const env = { ...store.env, RETRY_SCHEDULE: "500ms,500ms,1s,1s,1s", DELIVERY_TIMEOUT_MS: "1000", DELIVERY_CONCURRENCY: "8" };
    // Before the crash: a third of first attempts fail (retries pending), all answer slowly.
    let crashed = false;
    const receiver = await Receiver.start(({ headers }) => {
      if (crashed) return { status: 200 };
      const failFirst = headers["x-jobattempt"] === "0" && Number.parseInt(String(headers["x-jobid"]).slice(-2), 16) % 3 === 0;
      return { status: failFirst ? 500 : 200, delayMs: 150 };
    });
    let service: ServiceProcess = await spawnService(env);
    t.teardown(async () => {
      await kill(service, "SIGKILL");
      await receiver.close();
      await store.cleanup();
    });

    const client = await createClient(service.baseUrl, "Crash test");
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const created = await rest(
        service.baseUrl,
        "POST",
        "/api/webhookSubscription",
        { event: "Order.Shipped", url: `${receiver.url}?s=${i}` },
        client.auth,
      );
      t.is(created.status, 200, created.text);
    }
    const accepted = new Set<string>();
    const publishing = (async () => {
      for (let i = 0; i < EVENTS; i++) {
        const published = await rest(
          service.baseUrl,
          "POST",
          "/api/internal/events/publish",
          { clientId: client.id, event: "Order.Shipped", payload: { OrderId: `ord_${i}` }, idempotencyKey: `ship-${i}` },
          adminAuth,
        ).catch(() => undefined);
        // Only a 200 means accepted; a call cut by the crash promised nothing.
        if (published?.status === 200) for (const id of published.json.jobIds as string[]) accepted.add(id);
      }
    })();

    await publishing;
    await kill(service, "SIGKILL");
    crashed = true;
    t.is(accepted.size, SUBSCRIPTIONS * EVENTS);
    const deliveredBeforeCrash = new Set(receiver.requests.map((r) => r.headers["x-jobid"] as string));
    t.true(accepted.size > deliveredBeforeCrash.size, "the crash left work undone");

    service = await spawnService(env);
    const deadline = Date.now() + 120_000;
    // A 500 before the crash is not a delivery; every answer after it is a 200.
    const succeeded = () => new Set(receiver.requests.filter((r) => r.status === 200).map((r) => r.headers["x-jobid"] as string));
    while (Date.now() < deadline && [...accepted].some((id) => !succeeded().has(id))) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const missing = [...accepted].filter((id) => !succeeded().has(id));
    t.deepEqual(missing, [], "every accepted notification was delivered");

    // Duplicates are allowed, but each is the same job: same id, same body.
    const bodies = new Map<string, string>();
    for (const request of receiver.requests) {
      const id = request.headers["x-jobid"] as string;
      const known = bodies.get(id);
      if (known !== undefined) t.is(request.body, known, `job ${id} re-sent with an identical body`);
      bodies.set(id, request.body);
    }
    t.log(
      `${accepted.size} accepted, ${receiver.requests.length} requests received, ${deliveredBeforeCrash.size} jobs reached before the kill`,
    );
  });
}
