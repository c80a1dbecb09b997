import test from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { createJobStore } from "../../src/delivery/agenda/create-delivery-engine.js";
import { DeliveryWorker } from "../../src/delivery/delivery-worker.js";
import { endpointOf } from "../../src/delivery/endpoint.js";
import { HttpSender } from "../../src/delivery/http-sender.js";
import { RelaySender } from "../../src/delivery/relay-sender.js";
import type { DeliveryEvent } from "../../src/domain/delivery-events.js";
import { newId } from "../../src/domain/ids.js";
import { KeySealer } from "../../src/domain/key-sealing.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import { generateSigningKeyPair } from "../../src/domain/signature.js";
import { openStore } from "../../src/store/open-store.js";
import { Receiver } from "../helpers/receiver.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const [pglite] = storeTargets();

test("the worker tells its observer of each attempt it starts and finishes, and of a subscription it disables", async (t) => {
  const created = await (pglite as NonNullable<typeof pglite>).create();
  const config = loadConfig({ ...FAST_TEST_ENV, ...created.env });
  const log = pino({ level: "silent" });
  const opened = await openStore(config.store, log);
  const jobs = createJobStore(opened.database, { owner: "events", lockLifetimeMs: 30_000 });
  await jobs.prepare();
  const answers = [500, 410];
  const receiver = await Receiver.start(() => ({ status: answers.shift() ?? 200 }));
  const sender = new HttpSender({ timeoutMs: 2000, maxResponseBytes: 100, allowPrivateTargets: true, userAgent: "test" });
  t.teardown(async () => {
    await sender.close();
    await receiver.close();
    await opened.close();
    await created.cleanup();
  });

  const sealer = new KeySealer(config.signingMasterKey as Buffer);
  const client = await opened.store.clients.ensureWithKey("events", newId("cli"));
  const keys = await generateSigningKeyPair(2048);
  const at = new Date();
  const subscriptionId = newId("sub");
  const subscription: Subscription = {
    id: subscriptionId,
    clientId: client.id,
    event: "Order.Created",
    url: receiver.url,
    description: "",
    enabled: true,
    signatureScheme: "RSA_SHA256",
    publicKeyPem: keys.publicKeyPem,
    privateKeyPem: sealer.seal(keys.privateKeyPem, subscriptionId),
    createdAt: at,
    updatedAt: at,
  };
  await opened.store.subscriptions.insert(subscription);
  const notification: Notification = {
    id: newId("ntf"),
    subscriptionId,
    clientId: client.id,
    event: "Order.Created",
    body: '{"Event":"Order.Created","Timestamp":"2026-01-01T00:00:00.000Z"}',
    status: "pending",
    attemptCount: 0,
    createdAt: at,
    updatedAt: at,
  };
  await jobs.insert([{ notification, endpoint: endpointOf(client.id, receiver.url) }], (all) => all.map(() => false));

  const events: DeliveryEvent[] = [];
  const worker = new DeliveryWorker({
    store: opened.store,
    sender,
    relay: new RelaySender({ timeoutMs: 2000, maxResponseBytes: 100, announce: () => {} }),
    retryPolicy: config.retryPolicy,
    sealer,
    observer: { observe: (event) => events.push(event) },
    log,
    shutdown: new AbortController().signal,
  });

  t.like(await worker.attemptNext(notification.id), { kind: "retry", retry: 1 });
  t.like(await worker.attemptNext(notification.id), { kind: "done" });
  t.like(await worker.attemptNext(notification.id), { kind: "done" }, "nothing left to deliver");

  t.deepEqual(
    events.map((event) => event.kind),
    ["attempt-started", "attempt-finished", "attempt-started", "attempt-finished", "subscription-disabled"],
  );
  const [started, retried, , gone, disabled] = events;
  t.like(started, { kind: "attempt-started", attempt: 0, notification: { id: notification.id } });
  t.like(retried, { kind: "attempt-finished", status: "pending", sent: true, attempt: { attempt: 0, statusCode: 500, succeeded: false } });
  t.like(gone, { kind: "attempt-finished", status: "failed", attempt: { attempt: 1, statusCode: 410 } });
  t.like(disabled, { kind: "subscription-disabled", cause: "gone", subscription: { id: subscriptionId } });
  t.regex((disabled as { reason: string }).reason, /410 Gone/);
  for (const event of events) t.true(event.at instanceof Date);
});

test("a read handed to the worker is used only while fresh: an old one, or one taken back, is read again", async (t) => {
  const created = await (pglite as NonNullable<typeof pglite>).create();
  const config = loadConfig({ ...FAST_TEST_ENV, ...created.env });
  const log = pino({ level: "silent" });
  const opened = await openStore(config.store, log);
  const receiver = await Receiver.start();
  const sender = new HttpSender({ timeoutMs: 2000, maxResponseBytes: 100, allowPrivateTargets: true, userAgent: "test" });
  t.teardown(async () => {
    await sender.close();
    await receiver.close();
    await opened.close();
    await created.cleanup();
  });
  const sealer = new KeySealer(config.signingMasterKey as Buffer);
  const client = await opened.store.clients.ensureWithKey("reads", newId("cli"));
  const keys = await generateSigningKeyPair(2048);
  const at = new Date();
  const subscriptionId = newId("sub");
  const subscription: Subscription = {
    id: subscriptionId,
    clientId: client.id,
    event: "Order.Created",
    url: receiver.url,
    description: "",
    enabled: true,
    signatureScheme: "RSA_SHA256",
    publicKeyPem: keys.publicKeyPem,
    privateKeyPem: sealer.seal(keys.privateKeyPem, subscriptionId),
    createdAt: at,
    updatedAt: at,
  };
  const notification = (): Notification => ({
    id: newId("ntf"),
    subscriptionId,
    clientId: client.id,
    event: "Order.Created",
    body: "{}",
    status: "pending",
    attemptCount: 0,
    createdAt: at,
    updatedAt: at,
  });
  const worker = new DeliveryWorker({
    store: opened.store,
    sender,
    relay: new RelaySender({ timeoutMs: 2000, maxResponseBytes: 100, announce: () => {} }),
    retryPolicy: config.retryPolicy,
    sealer,
    observer: { observe: () => {} },
    log,
    shutdown: new AbortController().signal,
  });
  await opened.store.subscriptions.insert(subscription);
  const [fresh, old, takenBack] = [notification(), notification(), notification()];
  const jobs = createJobStore(opened.database, { owner: "reads", lockLifetimeMs: 30_000 });
  await jobs.prepare();
  const deliveries = [fresh, old, takenBack].map((n) => ({ notification: n, endpoint: endpointOf(client.id, receiver.url) }));
  await jobs.insert(deliveries, (all) => all.map(() => false));
  // Disabled in the store: only a kept read (saying enabled) can still send to it.
  await opened.store.subscriptions.disable(subscriptionId, "paused for the test", new Date());
  worker.expect(fresh, subscription);
  worker.expect(old, subscription, Date.now() - 3_000);
  worker.expect(takenBack, subscription);
  worker.unexpect(takenBack.id);
  await worker.attemptNext(old.id);
  await worker.attemptNext(takenBack.id);
  t.is(receiver.requests.length, 0, "an old read and one taken back are read again: disabled, no request");
  await worker.attemptNext(fresh.id);
  t.is(receiver.requests.length, 1, "a fresh read is used as it is");
});
