import type { ExecutionContext } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { type AttemptOutcome, DeliveryWorker } from "../../src/delivery/delivery-worker.js";
import { HttpSender } from "../../src/delivery/http-sender.js";
import type { DeliveryRead } from "../../src/delivery/job-store.js";
import { RelaySender } from "../../src/delivery/relay-sender.js";
import type { DeliveryObserver } from "../../src/domain/delivery-events.js";
import { endpointOf } from "../../src/domain/endpoint.js";
import { newId } from "../../src/domain/ids.js";
import { KeySealer } from "../../src/domain/key-sealing.js";
import type { Notification, Subscription } from "../../src/domain/model.js";
import { openJobs } from "../../src/store/open-jobs.js";
import { openStore } from "../../src/store/open-store.js";
import { Receiver, type Responder } from "./receiver.js";
import { FAST_TEST_ENV } from "./service.js";
import { storeTargets } from "./stores.js";
import { signedSubscription } from "./subscriptions.js";

const [pglite] = storeTargets();

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
  const { jobs } = openJobs(opened.database, { owner: "worker-test", lockLifetimeMs: 30_000 });
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
    await jobs.insert(deliveries);
    return notifications;
  };
  const worker = new DeliveryWorker({
    subscriptions: opened.store.subscriptions,
    sender,
    relay: new RelaySender({ timeoutMs: 2000, maxResponseBytes: 100, announce: () => {} }),
    retryPolicy: config.retryPolicy,
    sealer,
    observer,
    ...options,
    log,
    shutdown: new AbortController().signal,
  });
  /**
   * The notification's next attempt, as the engine runs it: its job locked
   * (its read, with `subscription` in place of the stored one if given), its
   * record ending or rescheduling the job; a retry is due at once.
   */
  const attempt = async (id: string, read?: { subscription: Subscription }): Promise<AttemptOutcome> => {
    const batch = await jobs.lockDue({
      limit: 100,
      endpointBudgets: new Map(),
      clientBudgets: new Map(),
      defaultPerEndpoint: 100,
      defaultPerClient: 100,
    });
    const job = batch.jobs.find((locked) => locked.id === id);
    await jobs.unlock(batch.jobs.filter((locked) => locked !== job).map((locked) => ({ id: locked.id, heldLock: locked.lockedAt })));
    const held = { id, heldLock: job?.lockedAt ?? new Date(0) };
    const given: DeliveryRead | undefined = job?.read && (read ? { ...job.read, ...read } : job.read);
    return worker.attempt(id, given, {
      requestDone: () => {},
      recordFinal: async (record, status) => {
        await jobs.finish({ ...held, attempt: record, status });
      },
      recordRetry: async (record) => {
        await jobs.retry({ ...held, attempt: record, nextRunAt: new Date() });
      },
      throttle: async () => undefined,
      postpone: async (until) => {
        await jobs.reschedule(held, until);
      },
    });
  };
  return { opened, receiver, subscription, accept, worker, attempt };
}
