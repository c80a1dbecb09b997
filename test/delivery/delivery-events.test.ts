import test, { type ExecutionContext } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { createJobStore } from "../../src/delivery/agenda/create-delivery-engine.js";
import { type AttemptRun, DeliveryWorker } from "../../src/delivery/delivery-worker.js";
import { endpointOf } from "../../src/delivery/endpoint.js";
import { HttpSender } from "../../src/delivery/http-sender.js";
import { RelaySender } from "../../src/delivery/relay-sender.js";
import type { DeliveryEvent, DeliveryObserver } from "../../src/domain/delivery-events.js";
import { newId } from "../../src/domain/ids.js";
import { KeySealer } from "../../src/domain/key-sealing.js";
import type { Notification } from "../../src/domain/model.js";
import { type OpenStore, openStore } from "../../src/store/open-store.js";
import { Receiver, type Responder } from "../helpers/receiver.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";
import { signedSubscription } from "../helpers/subscriptions.js";

const [pglite] = storeTargets();

/**
 * A worker over an embedded store holding one client's subscription to a
 * local receiver; `accept` stores notifications for it, each with its job.
 */
/** An attempt run by no scheduler: its records go to the store as they are (no job to end with them). */
function storeRun(opened: OpenStore): AttemptRun {
  return { requestDone: () => {}, recordFinal: (attempt, status) => opened.store.notifications.recordAttempt(attempt, status) };
}

async function workerSetUp(t: ExecutionContext, observer: DeliveryObserver, respond?: Responder) {
  const created = await (pglite as NonNullable<typeof pglite>).create();
  const config = loadConfig({ ...FAST_TEST_ENV, ...created.env });
  const log = pino({ level: "silent" });
  const opened = await openStore(config.store, log);
  const jobs = createJobStore(opened.database, { owner: "worker-test", lockLifetimeMs: 30_000 });
  await jobs.prepare();
  const receiver = await Receiver.start(respond);
  const sender = new HttpSender({ timeoutMs: 2000, maxResponseBytes: 100, allowPrivateTargets: true, userAgent: "test" });
  t.teardown(async () => {
    await sender.close();
    await receiver.close();
    await opened.close();
    await created.cleanup();
  });
  const sealer = new KeySealer(config.signingMasterKey as Buffer);
  const client = await opened.store.clients.ensureWithKey("worker-test", newId("cli"));
  const subscription = await signedSubscription(sealer, client.id, receiver.url);
  await opened.store.subscriptions.insert(subscription);
  const accept = async (count: number, body = "{}"): Promise<Notification[]> => {
    const at = new Date();
    const notifications = Array.from(
      { length: count },
      (): Notification => ({
        id: newId("ntf"),
        subscriptionId: subscription.id,
        clientId: client.id,
        event: "Order.Created",
        body,
        status: "pending",
        attemptCount: 0,
        createdAt: at,
        updatedAt: at,
      }),
    );
    const deliveries = notifications.map((notification) => ({ notification, endpoint: endpointOf(client.id, receiver.url) }));
    await jobs.insert(deliveries, (all) => all.map(() => false));
    return notifications;
  };
  const worker = new DeliveryWorker({
    store: opened.store,
    sender,
    relay: new RelaySender({ timeoutMs: 2000, maxResponseBytes: 100, announce: () => {} }),
    retryPolicy: config.retryPolicy,
    sealer,
    observer,
    log,
    shutdown: new AbortController().signal,
  });
  return { opened, receiver, subscription, accept, worker };
}

test("the worker tells its observer of each attempt it starts and finishes, and of a subscription it disables", async (t) => {
  const events: DeliveryEvent[] = [];
  const answers = [500, 410];
  const { opened, subscription, accept, worker } = await workerSetUp(t, { observe: (event) => events.push(event) }, () => ({
    status: answers.shift() ?? 200,
  }));
  const [notification] = await accept(1, '{"Event":"Order.Created","Timestamp":"2026-01-01T00:00:00.000Z"}');
  if (!notification) return t.fail("one notification");

  t.like(await worker.attemptNext(notification.id, storeRun(opened)), { kind: "retry", retry: 1 });
  t.like(await worker.attemptNext(notification.id, storeRun(opened)), { kind: "done" });
  t.like(await worker.attemptNext(notification.id, storeRun(opened)), { kind: "done" }, "nothing left to deliver");

  t.deepEqual(
    events.map((event) => event.kind),
    ["attempt-started", "attempt-finished", "attempt-started", "attempt-finished", "subscription-disabled"],
  );
  const [started, retried, , gone, disabled] = events;
  t.like(started, { kind: "attempt-started", attempt: 0, notification: { id: notification.id } });
  t.like(retried, { kind: "attempt-finished", status: "pending", sent: true, attempt: { attempt: 0, statusCode: 500, succeeded: false } });
  t.like(gone, { kind: "attempt-finished", status: "failed", attempt: { attempt: 1, statusCode: 410 } });
  t.like(disabled, { kind: "subscription-disabled", cause: "gone", subscription: { id: subscription.id } });
  t.regex((disabled as { reason: string }).reason, /410 Gone/);
  for (const event of events) t.true(event.at instanceof Date);
});

test("a read handed to the worker is used only while fresh: an old one, or one taken back, is read again", async (t) => {
  const { opened, receiver, subscription, accept, worker } = await workerSetUp(t, { observe: () => {} });
  const [fresh, old, takenBack] = await accept(3);
  if (!fresh || !old || !takenBack) return t.fail("three notifications");
  // Disabled in the store: only a kept read (saying enabled) can still send to it.
  await opened.store.subscriptions.disable(subscription.id, "paused for the test", new Date());
  worker.expect(fresh, subscription);
  worker.expect(old, subscription, Date.now() - 3_000);
  worker.expect(takenBack, subscription);
  worker.unexpect(takenBack.id);
  await worker.attemptNext(old.id, storeRun(opened));
  await worker.attemptNext(takenBack.id, storeRun(opened));
  t.is(receiver.requests.length, 0, "an old read and one taken back are read again: disabled, no request");
  await worker.attemptNext(fresh.id, storeRun(opened));
  t.is(receiver.requests.length, 1, "a fresh read is used as it is");
});
