import test from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { verifyBody } from "../../src/domain/signature.js";
import { openStore } from "../../src/store/open-store.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { postPublish, postSample, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { FAST_TEST_ENV, rest, startTestService, type TestService } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const [pglite] = storeTargets();
let running: TestService;
let env: Record<string, string>;
let cleanup: () => Promise<void>;

test.before(async () => {
  const store = await (pglite as NonNullable<typeof pglite>).create();
  env = store.env;
  running = await startTestService({ ...store.env, MAX_PAYLOAD_BYTES: "2048" });
  cleanup = store.cleanup;
});

test.after.always(async () => {
  await running?.service.stop();
  await cleanup?.();
});

const publish = (body: unknown) => postPublish(running.baseUrl, body, adminAuth);

test.serial("a receiver answering 410 Gone disables the subscription and gets no retries", async (t) => {
  const owner = await createClient(running.baseUrl, "Gone Inc");
  const receiver = await Receiver.start(() => ({ status: 410, body: "gone" }));
  t.teardown(() => receiver.close());
  const created = await postSubscription(running.baseUrl, { event: "Order.Shipped", url: receiver.url }, owner.auth);
  await publish({ clientId: owner.id, event: "Order.Shipped", payload: { OrderId: "o" } });
  await receiver.waitFor(1);
  await new Promise((resolve) => setTimeout(resolve, 800));
  t.is(receiver.requests.length, 1, "no retry after 410");
  const state = await rest(running.baseUrl, "GET", `/api/webhookSubscription/${created.json.id}`, undefined, owner.auth);
  t.false(state.json.enabled as boolean);
  t.regex(state.json.disabledReason as string, /410 Gone/);
});

test.serial("a hung receiver does not hold up other subscriptions", async (t) => {
  const owner = await createClient(running.baseUrl, "Neighbours");
  const hung = await Receiver.start(() => ({ status: 200, delayMs: 60_000 }));
  const healthy = await Receiver.start();
  t.teardown(() => Promise.all([hung.close(), healthy.close()]));
  await postSubscription(running.baseUrl, { event: "Customer.Created", url: hung.url }, owner.auth);
  await postSubscription(running.baseUrl, { event: "Customer.Created", url: healthy.url }, owner.auth);
  const started = Date.now();
  for (let i = 0; i < 5; i++) await publish({ clientId: owner.id, event: "Customer.Created", payload: { CustomerId: `c${i}` } });
  await healthy.waitFor(5, 10_000);
  t.true(Date.now() - started < 1500, `healthy deliveries took ${Date.now() - started} ms next to a hung receiver`);
  await hung.waitFor(1);
});

test.serial("hostile publish payloads are refused and nothing is stored", async (t) => {
  const owner = await createClient(running.baseUrl, "Hostile Inc");
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const created = await postSubscription(running.baseUrl, { event: "Order.Cancelled", url: receiver.url }, owner.auth);
  const tooBig = await publish({ clientId: owner.id, event: "Order.Cancelled", payload: { OrderId: "o", Reason: "x".repeat(4000) } });
  t.is(tooBig.status, 400);
  t.regex(tooBig.json.message as string, /larger than 2048 bytes/);
  const timestamp = await publish({ clientId: owner.id, event: "Order.Cancelled", payload: { Timestamp: "1999-01-01T00:00:00.000Z" } });
  t.is(timestamp.status, 400);
  const log = await rest(running.baseUrl, "GET", `/api/webhookSubscription/${created.json.id}/notifications`, undefined, owner.auth);
  t.deepEqual(log.json.notifications, [], "nothing was accepted");

  // Prototype-related keys are refused wherever they sit.
  for (const payload of ['{"OrderId":"o","__proto__":{"polluted":true}}', '{"OrderId":"o","Meta":{"constructor":{"prototype":{"x":1}}}}']) {
    const refused = await postPublish(
      running.baseUrl,
      `{"clientId":"${owner.id}","event":"Order.Cancelled","payload":${payload}}`,
      adminAuth,
    );
    t.is(refused.status, 400, refused.text);
    t.regex(refused.json.message as string, /may not use the key (__proto__|constructor)/);
  }
  t.is(({} as Record<string, unknown>).polluted, undefined);
  const after = await rest(running.baseUrl, "GET", `/api/webhookSubscription/${created.json.id}/notifications`, undefined, owner.auth);
  t.deepEqual(after.json.notifications, []);
  t.is(receiver.requests.length, 0);
});

test.serial("URLs with control characters or newlines are refused", async (t) => {
  for (const url of ["http://127.0.0.1:9/a\nb", "http://127.0.0.1:9/a\tb", "http://127.0.0.1:9/a\u0000"]) {
    const response = await postSubscription(running.baseUrl, { event: "Order.Created", url });
    t.is(response.status, 400, JSON.stringify(url));
    t.regex(response.json.message as string, /whitespace or control/);
  }
  const description = await postSubscription(running.baseUrl, {
    event: "Order.Created",
    url: "http://127.0.0.1:9/",
    description: "a\u0000b",
  });
  t.is(description.status, 400);
});

test.serial("private signing keys are sealed at rest: a dump of the store signs nothing", async (t) => {
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const created = await postSubscription(running.baseUrl, { event: "Order.Created", url: receiver.url });
  t.is(created.status, 200);
  await running.service.stop();
  const opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...env }).store, pino({ level: "silent" }));
  try {
    const stored = await opened.store.subscriptions.get(created.json.id as string);
    t.regex(stored?.privateKeyPem ?? "", /^sealed:v1:/);
    t.false(JSON.stringify(stored).includes("PRIVATE KEY"));
  } finally {
    await opened.close();
  }
  running = await startTestService({ ...env, MAX_PAYLOAD_BYTES: "2048" });
  const sample = await postSample(running.baseUrl, {
    event: "Order.Created",
    url: receiver.url,
  });
  t.is(sample.status, 200);
  const [delivery] = await receiver.waitFor(1);
  t.true(verifyBody(delivery?.body ?? "", delivery?.headers["x-signature"] as string, created.json.signatureKey as string));
});
