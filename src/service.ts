import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { createErrorInterceptor } from "./api/error-mapping.js";
import { createLoggingInterceptor } from "./api/interceptors/logging.js";
import { createRpcMetricsInterceptor } from "./api/interceptors/rpc-metrics.js";
import { createTracingInterceptor } from "./api/interceptors/tracing.js";
import { createRoutes, SERVICES } from "./api/routes.js";
import { type Listener, listen } from "./api/transport/listener.js";
import { createMetricsEndpoint } from "./api/transport/metrics-endpoint.js";
import { createRequestHandler, type RequestHandler, startingHandler } from "./api/transport/request-handler.js";
import type { Config } from "./config.js";
import { DeliveryEngine } from "./delivery/delivery-engine.js";
import { DeliveryWorker } from "./delivery/delivery-worker.js";
import { HttpSender } from "./delivery/http-sender.js";
import { RelaySender } from "./delivery/relay-sender.js";
import { ClientAccess } from "./domain/client-access.js";
import { ClientDirectory } from "./domain/clients.js";
import { observeAll } from "./domain/delivery-events.js";
import { DeliveryStats } from "./domain/delivery-stats.js";
import { DeliveryWatches } from "./domain/delivery-watch.js";
import { EventCatalog } from "./domain/event-catalog.js";
import { KeySealer } from "./domain/key-sealing.js";
import { Notifications } from "./domain/notifications.js";
import { OPERATIONAL_EVENT_TYPES, OperationalEvents } from "./domain/operational-events.js";
import { RelayAnswers } from "./domain/relay.js";
import { RelayLeases } from "./domain/relay-leases.js";
import { RetentionPurge } from "./domain/retention.js";
import { Subscriptions } from "./domain/subscriptions.js";
import { ActivityFeed } from "./live/activity-feed.js";
import { createActivityChannel } from "./live/create-activity-channel.js";
import { loadOrCreateMasterKey } from "./master-key.js";
import { MetricsObserver } from "./observability/delivery-metrics.js";
import { TracingObserver } from "./observability/delivery-tracing.js";
import { ServiceMetrics } from "./observability/metrics.js";
import { RecentDeliveries } from "./observability/recent-deliveries.js";
import { currentTraceHeaders } from "./observability/trace-context.js";
import { openJobs } from "./store/open-jobs.js";
import { openStore } from "./store/open-store.js";

/** How often a gRPC health Watch looks for a change of readiness. */
const HEALTH_WATCH_INTERVAL_MS = 1_000;

export interface RunningService {
  /** The port actually bound (useful with PORT=0). */
  port: number;
  stop(): Promise<void>;
}

/**
 * The composition root: binds the port first (a taken port fails at once,
 * before any store is opened), builds store, delivery engine, domain and
 * transport from one validated config, starts them, and stops them in
 * reverse order. Until everything is up the port answers 503 "starting".
 */
export async function startService(config: Config, log: Logger): Promise<RunningService> {
  let handler: RequestHandler = startingHandler();
  const listener = await listen(
    config.port,
    config.host,
    (req, res) => handler(req, res),
    (err) => log.error({ err }, "listener error"),
  );
  let started: Omit<RunningService, "port">;
  try {
    started = await startOn(listener, config, log, (ready) => {
      handler = ready;
    });
  } catch (error) {
    await listener.close(0);
    throw error;
  }
  // Before "listening", so that whoever waits for that line has read these.
  for (const [fields, message] of firstSteps(config, listener.port)) log.info(fields, message);
  log.info({ port: listener.port, store: config.store.kind }, "webhook service listening");
  return { port: listener.port, ...started };
}

/** What a newcomer needs at the first start: where the portal is, and how to get a credential for it. */
function firstSteps(config: Config, port: number): Array<[Record<string, string>, string]> {
  const host = ["0.0.0.0", "::"].includes(config.host) ? "localhost" : config.host.includes(":") ? `[${config.host}]` : config.host;
  const portal = `http://${host}:${port}/portal/`;
  const credentials = config.adminToken
    ? "operators sign in with ADMIN_TOKEN; a client's API key comes from the portal's Clients page or POST /api/internal/clients (docs/api.md)"
    : "ADMIN_TOKEN is unset, so the admin API (clients, API keys, publishing) is off: set ADMIN_TOKEN (16+ characters) to create clients and their API keys, or BOOTSTRAP_API_KEY for one client holding a key you choose (README, Quick start)";
  return [[{ portal }, `the portal is at ${portal}; ${credentials}`]];
}

async function startOn(
  listener: Listener,
  config: Config,
  log: Logger,
  serve: (handler: RequestHandler) => void,
): Promise<Omit<RunningService, "port">> {
  const shutdown = new AbortController();
  // Every delivery in flight listens for the shutdown.
  setMaxListeners(0, shutdown.signal);
  const opened = await openStore(config.store, log);
  let started: ClientAccess | undefined;
  let retention: RetentionPurge | undefined;
  try {
    const sealer = new KeySealer(
      config.signingMasterKey ?? (await loadOrCreateMasterKey(config.store.kind === "embedded" ? config.store.dataDir : ".", log)),
    );
    const catalog = new EventCatalog(opened.store.eventTypes);
    // The service's own events first: a catalog file's type of the same name does not replace them.
    await catalog.seed([...OPERATIONAL_EVENT_TYPES, ...config.catalog]);
    const access = new ClientAccess({
      store: opened.store.clients,
      onError: (err) => log.warn({ err }, "reading which clients are disabled failed; the next read tries again"),
      // Made below, once the store is open and running: a deleted client's data is purged soon.
      onDeleted: () => retention?.nudge(),
    });
    started = access;
    await access.start();
    const directory = new ClientDirectory(opened.store.clients, access, (err) =>
      log.warn({ err }, "recording an API key's last use failed"),
    );
    if (config.bootstrapApiKey) {
      const holder = await directory.ensureBootstrapClient(config.bootstrapApiKey);
      if (holder)
        log.info(
          { clientId: holder.client.id, keyId: holder.keyId },
          `BOOTSTRAP_API_KEY is key ${holder.keyId} of client ${holder.client.id}`,
        );
      else log.warn("BOOTSTRAP_API_KEY was revoked: it authenticates nothing; choose another key or unset it");
    }

    const metrics = config.metrics.enabled
      ? new ServiceMetrics({ onReadError: (err) => log.warn({ err }, "reading the queue's counts for /metrics failed") })
      : undefined;
    const instanceName = `webhooks-${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
    // Other instances' activity reaches this one's watchers through the database; the embedded store has one process.
    const feed = new ActivityFeed(createActivityChannel(opened.database, instanceName, log), config.watcherBufferSize);
    // Spans go nowhere until a tracer provider is registered (main.ts does with OTEL_EXPORTER_OTLP_ENDPOINT).
    const recentDeliveries = new RecentDeliveries();
    // Publishes through `notifications`, made below: events reach it only once the service runs.
    const operational = new OperationalEvents(
      (input) => notifications.publish(input),
      (err) => log.error({ err }, "publishing an operational event failed"),
      opened.store.subscriptions,
    );
    const observer = observeAll(
      [feed, new TracingObserver(), recentDeliveries, ...(metrics ? [new MetricsObserver(metrics)] : []), operational],
      (err) => log.error({ err }, "a delivery observer failed"),
    );
    const sender = new HttpSender({
      timeoutMs: config.deliveryTimeoutMs,
      maxResponseBytes: config.maxResponseBytes,
      allowPrivateTargets: config.allowPrivateTargets,
      userAgent: "webhook-notification-service/0.1",
    });
    const relay = new RelaySender({
      timeoutMs: config.deliveryTimeoutMs,
      maxResponseBytes: config.maxResponseBytes,
      announce: (activity) => feed.relay(activity),
    });
    const worker = new DeliveryWorker({
      subscriptions: opened.deliveryStore.subscriptions,
      sender,
      relay,
      retryPolicy: config.retryPolicy,
      sealer,
      ...(config.autoDisableAfterMs === undefined ? {} : { autoDisableAfterMs: config.autoDisableAfterMs }),
      ...(config.failingNoticeAfterMs === undefined ? {} : { failingNoticeAfterMs: config.failingNoticeAfterMs }),
      observer,
      ...(config.propagateTraceContext ? { traceHeaders: currentTraceHeaders } : {}),
      isClientHeld: (clientId) => access.isBarred(clientId),
      log,
      shutdown: shutdown.signal,
    });
    // Longer than any attempt (timeout plus store writes), so a second
    // worker never runs one twice; short enough that a crashed worker's
    // jobs come back soon.
    const lockLifetimeMs = Math.max(2 * config.deliveryTimeoutMs, config.deliveryTimeoutMs + 10_000);
    // Unique per instance (replicas in containers share pid 1): the holder of its locks.
    const { jobs, wakeUps } = openJobs(opened.database, { owner: instanceName, lockLifetimeMs });
    const engine = new DeliveryEngine(jobs, wakeUps, {
      worker,
      retryPolicy: config.retryPolicy,
      concurrency: config.deliveryConcurrency,
      limits: config.deliveryLimits,
      pollIntervalMs: config.schedulerPollMs,
      lockLifetimeMs,
      name: instanceName,
      log,
    });
    metrics?.watch(engine);
    const subscriptions = new Subscriptions({
      store: opened.store.subscriptions,
      catalog,
      targetPolicy: { allowPrivateTargets: config.allowPrivateTargets, allowHttpTargets: config.allowHttpTargets },
      signingKeyBits: config.signingKeyBits,
      rotationGraceMs: config.keyRotationGraceMs,
      sealer,
      maxSubscriptionsPerClient: config.maxSubscriptionsPerClient,
      relayLeaseMs: config.relayLeaseMs,
    });
    const notifications = new Notifications({
      store: opened.store.notifications,
      subscriptionStore: opened.store.subscriptions,
      clients: opened.store.clients,
      access,
      queue: engine,
      catalog,
      subscriptions,
      maxPayloadBytes: config.maxPayloadBytes,
      observer,
    });

    await engine.start();
    // Rotations entering their last hour are told within a few poll periods (10 s by default).
    operational.start(Math.min(60_000, 10 * config.schedulerPollMs));
    await feed.start((result) => relay.settle(result));
    const purge = new RetentionPurge({
      store: opened.store.notifications,
      stats: opened.store.stats,
      clients: opened.store.clients,
      retentionMs: config.retentionMs,
      observer: metrics ?? { purged: () => {}, oldestKept: () => {} },
      onError: (err) => log.warn({ err }, "a retention purge failed; the next one tries again"),
    });
    retention = purge;
    purge.start();
    const leases = new RelayLeases({
      store: opened.store.subscriptions,
      leaseMs: config.relayLeaseMs,
      onError: (err) => log.warn({ err }, "renewing or ending relay leases failed; the next round tries again"),
      onEnded: (subscriptionId) => log.info({ subscriptionId }, "deleted a temporary relay subscription: its lease ended"),
    });
    leases.start();
    const watches = new DeliveryWatches({
      leases,
      feed,
      clients: opened.store.clients,
      subscriptions: opened.store.subscriptions,
      notifications: opened.store.notifications,
    });
    let stopping: Promise<void> | undefined;
    /** Aborted as shutdown begins: gRPC health watches end. */
    const closing = new AbortController();
    const readiness = () => {
      if (stopping) return { ok: false, reason: "shutting down" };
      const space = opened.space();
      return space.ok ? engine.health() : space;
    };
    serve(
      createRequestHandler({
        routes: createRoutes(
          {
            directory,
            access,
            catalog,
            subscriptions,
            notifications,
            watches,
            recentDeliveries,
            stats: new DeliveryStats(opened.store.stats, opened.store.clients),
            jobQueue: engine,
            relayAnswers: new RelayAnswers({
              subscriptions: opened.store.subscriptions,
              // Settled here, or passed to the instance whose attempt waits for it.
              deliver: (result) => relay.settle(result) || feed.passRelayResult(result),
            }),
            adminToken: config.adminToken,
            rateLimit: config.rateLimit,
            authFailuresPerMinute: config.authFailuresPerMinute,
            health: { readiness, watchIntervalMs: HEALTH_WATCH_INTERVAL_MS, closing: closing.signal },
          },
          [
            createTracingInterceptor(),
            createLoggingInterceptor(log),
            ...(metrics ? [createRpcMetricsInterceptor(metrics)] : []),
            createErrorInterceptor(log),
          ],
        ),
        services: SERVICES,
        maxBodyBytes: config.maxBodyBytes,
        readiness,
        metrics:
          metrics &&
          createMetricsEndpoint({
            registry: metrics.registry,
            token: config.metrics.token,
            onError: (err) => log.error({ err }, "collecting metrics failed"),
          }),
      }),
    );
    log.info({ store: opened.description }, "store open, deliveries running");

    return {
      stop() {
        stopping ??= (async () => {
          log.info("shutting down: no new requests, draining deliveries");
          closing.abort();
          operational.stop();
          // Live watches never end by themselves: end them, or closing the port waits out its grace.
          await feed.stop();
          await purge.stop();
          await leases.stop();
          await access.stop();
          await listener.close(config.shutdownGraceMs);
          await engine.stop(config.shutdownGraceMs, () => shutdown.abort());
          await sender.close();
          await opened.close();
          log.info("stopped");
        })();
        return stopping;
      },
    };
  } catch (error) {
    await started?.stop();
    await opened.close();
    throw error;
  }
}
