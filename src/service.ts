import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { createErrorInterceptor, createLoggingInterceptor } from "./api/interceptors.js";
import { type Listener, listen } from "./api/listener.js";
import { createRequestHandler } from "./api/request-handler.js";
import { createRoutes, SERVICES } from "./api/routes.js";
import type { Config } from "./config.js";
import { DeliveryScheduler } from "./delivery/delivery-scheduler.js";
import { DeliveryWorker } from "./delivery/delivery-worker.js";
import { HttpSender } from "./delivery/http-sender.js";
import { ClientDirectory } from "./domain/clients.js";
import { EventCatalog } from "./domain/event-catalog.js";
import { KeySealer } from "./domain/key-sealing.js";
import { Notifications } from "./domain/notifications.js";
import { Subscriptions } from "./domain/subscriptions.js";
import { loadOrCreateMasterKey } from "./master-key.js";
import { openStore } from "./store/open-store.js";

export interface RunningService {
  /** The port actually bound (useful with PORT=0). */
  port: number;
  stop(): Promise<void>;
}

/**
 * The composition root: builds store, scheduler, domain and transport from
 * one validated config, starts them, and stops them in reverse order.
 */
export async function startService(config: Config, log: Logger): Promise<RunningService> {
  const shutdown = new AbortController();
  // Every delivery in flight listens for the shutdown.
  setMaxListeners(0, shutdown.signal);
  let ready = false;
  const opened = await openStore(config.store, log);
  const { store, deliveryStore } = opened;
  try {
    const sealer = new KeySealer(
      config.signingMasterKey ?? (await loadOrCreateMasterKey(config.store.kind === "embedded" ? config.store.dataDir : ".", log)),
    );
    const catalog = new EventCatalog(store.eventTypes);
    await catalog.seed(config.catalog);
    const directory = new ClientDirectory(store.clients);
    if (config.bootstrapApiKey) await directory.ensureBootstrapClient(config.bootstrapApiKey);

    const sender = new HttpSender({
      timeoutMs: config.deliveryTimeoutMs,
      maxResponseBytes: config.maxResponseBytes,
      allowPrivateTargets: config.allowPrivateTargets,
      userAgent: "webhook-notification-service/0.1",
    });
    const worker = new DeliveryWorker({
      store: deliveryStore,
      sender,
      retryPolicy: config.retryPolicy,
      sealer,
      ...(config.autoDisableAfterMs === undefined ? {} : { autoDisableAfterMs: config.autoDisableAfterMs }),
      log,
      shutdown: shutdown.signal,
    });
    const scheduler = new DeliveryScheduler(
      {
        backend: opened.agendaBackend,
        ...(opened.notificationChannel ? { notificationChannel: opened.notificationChannel } : {}),
        ...(opened.scheduleDeliveries ? { scheduleDeliveries: opened.scheduleDeliveries } : {}),
        ...(opened.insertQueued ? { insertQueued: opened.insertQueued } : {}),
        ...(opened.bulkJobs ? { bulkJobs: opened.bulkJobs } : {}),
        retryPolicy: config.retryPolicy,
        pollIntervalMs: config.schedulerPollMs,
        concurrency: config.deliveryConcurrency,
        // Longer than any attempt (timeout plus store writes), so a second
        // worker never runs one twice; short enough that a crashed worker's
        // jobs come back soon.
        lockLifetimeMs: Math.max(2 * config.deliveryTimeoutMs, config.deliveryTimeoutMs + 10_000),
        sweepIntervalMs: 60_000,
        // Unique per instance (replicas in containers share pid 1): Agenda's
        // lastModifiedBy, and how a scheduler tells its own wake-ups from others'.
        name: `webhooks-${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`,
      },
      { worker, notifications: deliveryStore.notifications, log },
    );
    const subscriptions = new Subscriptions({
      store: store.subscriptions,
      catalog,
      targetPolicy: { allowPrivateTargets: config.allowPrivateTargets, allowHttpTargets: config.allowHttpTargets },
      signingKeyBits: config.signingKeyBits,
      rotationGraceMs: config.keyRotationGraceMs,
      sealer,
    });
    const notifications = new Notifications({
      store: store.notifications,
      subscriptionStore: store.subscriptions,
      queue: scheduler,
      catalog,
      subscriptions,
      maxPayloadBytes: config.maxPayloadBytes,
      onQueueError: (err, ids) => log.error({ err, count: ids.length }, "accepted notifications not queued yet; the sweep will queue them"),
    });

    const handler = createRequestHandler({
      routes: createRoutes(
        { directory, catalog, subscriptions, notifications, adminToken: config.adminToken, rateLimit: config.rateLimit },
        [createLoggingInterceptor(log), createErrorInterceptor(log)],
      ),
      services: SERVICES,
      maxBodyBytes: config.maxBodyBytes,
      isReady: () => ready,
    });

    await scheduler.start();
    let listener: Listener;
    try {
      listener = await listen(config.port, config.host, handler, (err) => log.error({ err }, "listener error"));
    } catch (error) {
      await scheduler.stop(0, () => shutdown.abort());
      throw error;
    }
    ready = true;
    log.info({ port: listener.port, store: opened.description }, "webhook service listening");

    let stopping: Promise<void> | undefined;
    return {
      port: listener.port,
      stop() {
        stopping ??= (async () => {
          ready = false;
          log.info("shutting down: no new requests, draining deliveries");
          await listener.close(config.shutdownGraceMs);
          await scheduler.stop(config.shutdownGraceMs, () => shutdown.abort());
          await sender.close();
          await opened.close();
          log.info("stopped");
        })();
        return stopping;
      },
    };
  } catch (error) {
    await opened.close();
    throw error;
  }
}
