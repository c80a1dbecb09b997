import test from "ava";
import { createClient } from "../helpers/admin.js";
import { rest, startTestService } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

test("each client has its own rate limit: 429 with Retry-After past the burst", async (t) => {
  const [pglite] = storeTargets();
  const store = await (pglite as NonNullable<typeof pglite>).create();
  const { service, baseUrl } = await startTestService({ ...store.env, RATE_LIMIT_PER_SECOND: "1", RATE_LIMIT_BURST: "3" });
  t.teardown(async () => {
    await service.stop();
    await store.cleanup();
  });
  // The admin bucket pays for these two.
  const busy = await createClient(baseUrl, "Busy");
  const calm = await createClient(baseUrl, "Calm");

  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await rest(baseUrl, "GET", "/api/webhookSubscription/events", undefined, busy.auth)).status);
  t.deepEqual(statuses, [200, 200, 200, 429]);
  const limited = await fetch(`${baseUrl}/api/webhookSubscription/events`, { headers: busy.auth });
  t.is(limited.status, 429);
  t.is(limited.headers.get("retry-after"), "1");
  t.like(await limited.json(), { code: "resource_exhausted" });
  t.is((await rest(baseUrl, "GET", "/api/webhookSubscription/events", undefined, calm.auth)).status, 200, "another client is not affected");

  const connect = await fetch(`${baseUrl}/webhooks.v1.SubscriptionService/ListEvents`, {
    method: "POST",
    headers: { ...busy.auth, "content-type": "application/json" },
    body: "{}",
  });
  t.is(connect.status, 429, "the Connect path shares the limit");
  await new Promise((resolve) => setTimeout(resolve, 1100));
  t.is((await rest(baseUrl, "GET", "/api/webhookSubscription/events", undefined, busy.auth)).status, 200, "tokens refill");
});
