import { createClient as connectClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import test from "ava";
import { DeliveryActivityKind, DeliveryService } from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { createClient, publishEvent, registerEventType } from "../helpers/admin.js";
import { postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { anotherInstance, embeddedService, rest, serviceOn } from "../helpers/service.js";
import { postgresOnly, storeTargets, testOn } from "../helpers/stores.js";
import { Watching } from "../helpers/watch.js";

const RATE = 5;
const COUNT = 30;
/** The default poll: a job handed back must go out at its slot, not wait for the next poll. */
const DEFAULT_POLL = { SCHEDULER_POLL_MS: "1000" };

/** The most requests any one-second window holds (sliding, from each request's arrival). */
function busiestSecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while ((sorted[end] as number) - (sorted[start] as number) >= 1000) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

async function setUp(base: string) {
  const owner = await createClient(base, "Throttled");
  await registerEventType(base, "Throttle.Tick");
  return owner;
}

async function subscribe(
  t: { is: (a: unknown, b: unknown, m?: string) => void },
  base: string,
  auth: Record<string, string>,
  body: object,
) {
  const created = await postSubscription(base, { event: "Throttle.Tick", ...body }, auth);
  t.is(created.status, 200, created.text);
  return created.json;
}

async function publish(base: string, clientId: string, n: number) {
  await publishEvent(base, clientId, "Throttle.Tick", { n });
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: a subscription's rate limit spaces its deliveries; waiting is neither an attempt nor a failure, and another subscription flows at full speed`,
    async (t) => {
      const [slow, fast] = await Promise.all([Receiver.start(), Receiver.start()]);
      t.teardown(() => Promise.all([slow.close(), fast.close()]));
      const { baseUrl: base } = await serviceOn(t, target);
      const owner = await setUp(base);
      const throttled = await subscribe(t, base, owner.auth, { url: slow.url, rateLimitPerSecond: RATE });
      t.is(throttled.rateLimitPerSecond, RATE, "the subscription shows its limit");
      await subscribe(t, base, owner.auth, { url: fast.url });

      const transport = createConnectTransport({ baseUrl: base, httpVersion: "1.1" });
      const deliveries = connectClient(DeliveryService, transport);
      const watching = await Watching.open((signal) =>
        deliveries.watchDeliveries({ subscriptionId: String(throttled.id) }, { headers: owner.auth, signal }),
      );
      try {
        await Promise.all(Array.from({ length: COUNT }, (_, n) => publish(base, owner.id, n)));
        await fast.waitFor(COUNT, 20_000);
        await slow.waitFor(COUNT, 30_000);
        const times = slow.requests.map((r) => r.at);
        const spanMs = Math.max(...times) - Math.min(...times);
        const sent = (await watching.until((seen) => seen.filter((a) => a.kind === DeliveryActivityKind.ATTEMPT_STARTED).length >= COUNT))
          .filter((a) => a.kind === DeliveryActivityKind.ATTEMPT_STARTED)
          .map((a) => Number(a.occurredAt?.seconds ?? 0) * 1000 + Math.floor((a.occurredAt?.nanos ?? 0) / 1e6));
        t.true(
          busiestSecond(sent) <= RATE + 1,
          `let out at most ${RATE} a second, one more where a second starts and ends on one: ${busiestSecond(sent)}`,
        );
        // Arrival times add the network's and a busy machine's jitter to the times requests were let out.
        t.true(busiestSecond(times) <= RATE + 2, `received at most ${RATE} a second, give or take one: ${busiestSecond(times)}`);
        t.true(spanMs >= ((COUNT - RATE - 1) / RATE) * 1000, `spread over the time the rate needs: ${spanMs} ms`);
        const fastLast = Math.max(...fast.requests.map((r) => r.at));
        t.true(fastLast < Math.max(...times) - 2000, "the other subscription, not held back, was done seconds earlier");
        t.is(new Set(slow.requests.map((r) => r.headers["x-jobid"])).size, COUNT, "each notification once");
        t.true(
          slow.requests.every((r) => r.headers["x-jobattempt"] === "0"),
          "each on its first attempt: waiting used up no attempt",
        );
        const throttledActivity = await watching.until((seen) => seen.some((a) => a.kind === DeliveryActivityKind.THROTTLED));
        const held = throttledActivity.find((a) => a.kind === DeliveryActivityKind.THROTTLED);
        t.truthy(held?.nextAttemptAt, "the live stream says when a held-back attempt goes out");
        t.false(
          watching.activities.some(
            (a) => a.kind === DeliveryActivityKind.FAILED || (a.kind === DeliveryActivityKind.ATTEMPT_FINISHED && !a.succeeded),
          ),
          "nothing shown as failing",
        );
      } finally {
        watching.close();
      }
      const log = await rest(base, "GET", `/api/webhookSubscription/${throttled.id}/notifications?pageSize=100`, undefined, owner.auth);
      t.is(log.status, 200, log.text);
      const notifications = log.json.notifications as Array<{ status: string; attemptCount: number }>;
      t.is(notifications.length, COUNT);
      t.true(
        notifications.every((n) => n.status === "NOTIFICATION_STATUS_DELIVERED" && n.attemptCount === 1),
        "every one delivered on one attempt",
      );
    },
  );
}

test("a rate limit is a whole number from 0 to 10000; 0 removes it", async (t) => {
  const { baseUrl: base } = await embeddedService(t);
  const owner = await setUp(base);
  for (const bad of [10_001, 2.5, -1]) {
    const refused = await postSubscription(
      base,
      { event: "Throttle.Tick", url: "https://example.com/hook", rateLimitPerSecond: bad },
      owner.auth,
    );
    t.is(refused.status, 400, `${bad}: ${refused.text}`);
    t.regex(refused.text, /rateLimitPerSecond|rate_limit_per_second/, `${bad}: the answer names the field`);
  }
  const created = await subscribe(t, base, owner.auth, { url: "https://example.com/hook", rateLimitPerSecond: 10_000 });
  t.is(created.rateLimitPerSecond, 10_000);
  const lifted = await rest(base, "PATCH", `/api/webhookSubscription/${created.id}`, { rateLimitPerSecond: 0 }, owner.auth);
  t.is(lifted.status, 200, lifted.text);
  t.is(lifted.json.rateLimitPerSecond ?? 0, 0);
  const read = await rest(base, "GET", `/api/webhookSubscription/${created.id}`, undefined, owner.auth);
  t.is(read.json.rateLimitPerSecond ?? 0, 0, "stored without a limit");
  const limited = await rest(base, "PATCH", `/api/webhookSubscription/${created.id}`, { rateLimitPerSecond: 3 }, owner.auth);
  t.is(limited.json.rateLimitPerSecond, 3);
});

const postgres = postgresOnly(test, "a rate limit shared by two instances");
if (postgres) {
  test("two instances on one database keep one subscription's rate limit between them (PostgreSQL)", async (t) => {
    const slow = await Receiver.start();
    t.teardown(() => slow.close());
    const a = await serviceOn(t, postgres, DEFAULT_POLL);
    const b = await anotherInstance(t, a, DEFAULT_POLL);
    const owner = await setUp(a.baseUrl);
    await subscribe(t, a.baseUrl, owner.auth, { url: slow.url, rateLimitPerSecond: RATE });
    // Publishes through both: each instance accepts (and may lock) its own half.
    for (let n = 0; n < COUNT; n++) await publish(n % 2 === 0 ? a.baseUrl : b.baseUrl, owner.id, n);
    await slow.waitFor(COUNT, 30_000);
    const times = slow.requests.map((r) => r.at);
    // Arrival times add the network's and a busy machine's jitter to the times requests were let out.
    t.true(busiestSecond(times) <= RATE + 2, `received at most ${RATE} a second between both, give or take one: ${busiestSecond(times)}`);
    t.is(new Set(slow.requests.map((r) => r.headers["x-jobid"])).size, COUNT);
  });
}
