import type { ExecutionContext } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { createJobStore } from "../../src/delivery/agenda/create-delivery-engine.js";
import { type AttemptRun, DeliveryWorker } from "../../src/delivery/delivery-worker.js";
import { endpointOf } from "../../src/delivery/endpoint.js";
import { HttpSender } from "../../src/delivery/http-sender.js";
import { RelaySender } from "../../src/delivery/relay-sender.js";
import type { DeliveryObserver } from "../../src/domain/delivery-events.js";
import { newId } from "../../src/domain/ids.js";
import { KeySealer } from "../../src/domain/key-sealing.js";
import type { Notification } from "../../src/domain/model.js";
import { type OpenStore, openStore } from "../../src/store/open-store.js";
import { Receiver, type Responder } from "./receiver.js";
import { FAST_TEST_ENV } from "./service.js";
import { storeTargets } from "./stores.js";
import { signedSubscription } from "./subscriptions.js";

const [pglite] = storeTargets();

/** An attempt run by no scheduler: its records go to the store as they are (no job to end with them). */
export function storeRun(opened: OpenStore): AttemptRun {
  return {
    requestDone: () => {},
    recordFinal: (attempt, status) => opened.store.notifications.recordAttempt(attempt, status),
    recordRetry: (attempt) => opened.store.notifications.recordAttempt(attempt, "pending"),
  };
}

/**
 * A worker over an embedded store holding one client's subscription to a
 * local receiver; `accept` stores notifications for it, each with its job.
 */
export async function workerSetUp(
  t: ExecutionContext,
  observer: DeliveryObserver,
  respond?: Responder,
  options: { autoDisableAfterMs?: number } = {},
) {
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
    ...options,
    log,
    shutdown: new AbortController().signal,
  });
  return { opened, receiver, subscription, accept, worker };
}
