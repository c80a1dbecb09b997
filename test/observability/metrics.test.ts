import test from "ava";
import { createClient } from "../helpers/admin.js";
import { postPublish, postSubscription } from "../helpers/calls.js";
import { eventually } from "../helpers/eventually.js";
import { grew, sampleOf, scrape } from "../helpers/metrics.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, embeddedService, rest, serviceOn } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const METRICS_TOKEN = "metrics-token-0123456789";
const ORDER = { OrderId: "ord_42", CustomerId: "cus_7", TotalAmount: 42.5, Currency: "EUR" };
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Scrapes until `done` holds of a scrape, for at most `timeoutMs`; answers that scrape. */
function scrapeUntil(baseUrl: string, done: (samples: Map<string, number>) => boolean, timeoutMs = 20_000) {
  return eventually(
    "the metrics to get there",
    async () => {
      const samples = await scrape(baseUrl, METRICS_TOKEN);
      return done(samples) ? samples : undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

for (const target of storeTargets()) {
  test.serial(`${target.name}: /metrics counts a real publish, its deliveries and retries, and the queue drains to zero`, async (t) => {
    const fine = await Receiver.start();
    let failures = 1;
    const flaky = await Receiver.start(() => (failures-- > 0 ? { status: 500 } : { status: 204 }));
    t.teardown(async () => {
      await fine.close();
      await flaky.close();
    });
    const { baseUrl } = await serviceOn(t, target, { METRICS_TOKEN });

    const unauthorised = await fetch(`${baseUrl}/metrics`);
    t.is(unauthorised.status, 401, "METRICS_TOKEN guards the scrape");
    t.is((await fetch(`${baseUrl}/metrics`, { headers: { authorization: "Bearer wrong-token-0123456789" } })).status, 401);
    const first = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    t.regex(first.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    await first.text();

    const client = await createClient(baseUrl, "metrics");
    for (const url of [fine.url, flaky.url]) {
      const created = await postSubscription(baseUrl, { event: "Order.Created", url }, client.auth);
      t.is(created.status, 200, created.text);
    }
    const before = await scrape(baseUrl, METRICS_TOKEN);
    const published = await postPublish(baseUrl, { clientId: client.id, event: "Order.Created", payload: ORDER }, admin);
    t.is(published.status, 200, published.text);
    const nobody = await postPublish(baseUrl, { clientId: client.id, event: "Order.Shipped", payload: {} }, admin);
    t.is(nobody.status, 200, nobody.text);
    const missing = await rest(baseUrl, "GET", "/api/webhookSubscription/sub_0123456789abcdef0123456789abcdef", undefined, client.auth);
    t.is(missing.status, 404);

    const event = { event: "Order.Created" };
    const after = await scrapeUntil(
      baseUrl,
      (samples) =>
        grew(before, samples, "webhook_deliveries_total", { outcome: "delivered", ...event }) >= 2 &&
        sampleOf(samples, "webhook_queue_pending") === 0,
    );
    t.is(grew(before, after, "webhook_notifications_accepted_total", event), 2);
    t.is(grew(before, after, "webhook_publish_fanout_count"), 2, "both publishes, the one nobody subscribes to too");
    t.is(grew(before, after, "webhook_publish_fanout_sum"), 2);
    t.is(grew(before, after, "webhook_publish_fanout_bucket", { le: "0" }), 1);
    t.is(grew(before, after, "webhook_deliveries_total", { outcome: "delivered", ...event }), 2);
    t.is(grew(before, after, "webhook_deliveries_total", { outcome: "failed_retryable", ...event }), 1);
    t.is(grew(before, after, "webhook_notifications_completed_total", { status: "delivered", ...event }), 2);
    t.is(grew(before, after, "webhook_delivery_attempt_duration_seconds_count", { outcome: "delivered" }), 2);
    t.is(grew(before, after, "webhook_delivery_attempt_duration_seconds_count", { outcome: "failed_retryable" }), 1);
    t.is(grew(before, after, "webhook_delivery_lag_seconds_count", { stage: "first_attempt" }), 2);
    t.is(grew(before, after, "webhook_delivery_lag_seconds_count", { stage: "delivered" }), 2);
    t.true(sampleOf(after, "webhook_delivery_lag_seconds_sum", { stage: "delivered" }) >= 0.1, "the retry waited RETRY_SCHEDULE's 100 ms");
    t.is(grew(before, after, "webhook_api_requests_total", { rpc: "webhooks.v1.EventService/PublishEvent", code: "ok" }), 2);
    t.is(
      grew(before, after, "webhook_api_requests_total", { rpc: "webhooks.v1.SubscriptionService/GetSubscription", code: "not_found" }),
      1,
    );
    t.is(grew(before, after, "webhook_api_request_duration_seconds_count", { rpc: "webhooks.v1.EventService/PublishEvent" }), 2);
    t.is(sampleOf(after, "webhook_queue_scheduled"), 0);
    t.is(sampleOf(after, "webhook_queue_oldest_pending_age_seconds"), 0);
    t.is(sampleOf(after, "webhook_deliveries_in_flight"), 0);
    t.true(sampleOf(after, "process_resident_memory_bytes") > 0, "Node's process metrics");
    t.is(fine.requests.length, 1);
    t.is(flaky.requests.length, 2);
  });
}

test.serial("the queue gauges see a backlog: pending jobs, the oldest one's age, and endpoints at their cap", async (t) => {
  const held = await Receiver.start(() => ({ status: 200, delayMs: 60_000 }));
  t.teardown(() => held.close());
  // One request at a time per endpoint, so that a receiver that does not answer holds its one slot and the rest wait.
  const { baseUrl } = await embeddedService(t, { METRICS_TOKEN, DELIVERY_ENDPOINT_CONCURRENCY: "1", DELIVERY_TIMEOUT_MS: "60000" });
  const client = await createClient(baseUrl, "backlog");
  const created = await postSubscription(baseUrl, { event: "Order.Created", url: held.url }, client.auth);
  t.is(created.status, 200, created.text);
  for (let i = 0; i < 5; i++) {
    const published = await postPublish(baseUrl, { clientId: client.id, event: "Order.Created", payload: ORDER }, admin);
    t.is(published.status, 200, published.text);
  }
  await held.waitFor(1);
  const samples = await scrapeUntil(
    baseUrl,
    (s) => sampleOf(s, "webhook_endpoints_at_concurrency_cap") === 1 && sampleOf(s, "webhook_queue_oldest_pending_age_seconds") > 0,
  );
  t.is(sampleOf(samples, "webhook_deliveries_in_flight"), 1);
  t.is(sampleOf(samples, "webhook_endpoints_in_flight"), 1);
  // The four waiting are locked here for a moment, then handed back to the store as pending: five jobs either way.
  t.is(sampleOf(samples, "webhook_queue_pending") + sampleOf(samples, "webhook_queue_running"), 5);
  t.true(sampleOf(samples, "webhook_queue_pending") >= 1);
});

test.serial("METRICS_ENABLED=false: no /metrics", async (t) => {
  const { baseUrl } = await embeddedService(t, { METRICS_ENABLED: "false" });
  const response = await fetch(`${baseUrl}/metrics`);
  t.is(response.status, 404);
  t.is((await fetch(`${baseUrl}/readyz`)).status, 200);
});
