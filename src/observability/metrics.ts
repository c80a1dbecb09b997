import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { LaneOccupancy } from "../delivery/fairness/fair-lanes.js";
import type { JobCounts } from "../delivery/job-store.js";
import type { PurgedRows, RetentionObserver } from "../domain/retention.js";

/** What the scrape-time gauges read: the job store's counts (every instance's queue) and this instance's lanes. */
export interface QueueSources {
  counts(): Promise<JobCounts>;
  occupancy(): LaneOccupancy;
}

const SECONDS_ATTEMPT = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60];
const SECONDS_LAG = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 24 * 3600];
const SECONDS_RPC = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const FANOUT = [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/**
 * The service's Prometheus metrics, in one registry (names and labels are
 * documented in docs/observability.md). Counters and histograms are fed by
 * the delivery observer and the RPC interceptor; the queue and lane gauges
 * are read when scraped, from `sources` once the delivery engine is built.
 * No label carries a subscription, client or URL: those live in the
 * delivery log.
 */
export class ServiceMetrics implements RetentionObserver {
  readonly registry = new Registry();
  readonly deliveries = new Counter({
    name: "webhook_deliveries_total",
    help: "Delivery attempts by outcome (delivered, failed_retryable, failed_final, timeout, forbidden_target, gone, abandoned) and event type.",
    labelNames: ["outcome", "event"] as const,
    registers: [this.registry],
  });
  readonly completed = new Counter({
    name: "webhook_notifications_completed_total",
    help: "Notifications that reached a final status (delivered, failed), by event type.",
    labelNames: ["status", "event"] as const,
    registers: [this.registry],
  });
  readonly attemptDuration = new Histogram({
    name: "webhook_delivery_attempt_duration_seconds",
    help: "Time from sending an attempt's request to the receiver's complete answer (or the failure to get one).",
    labelNames: ["outcome"] as const,
    buckets: SECONDS_ATTEMPT,
    registers: [this.registry],
  });
  readonly lag = new Histogram({
    name: "webhook_delivery_lag_seconds",
    help: "Time from a notification's acceptance to its first attempt starting (stage=first_attempt) and to its 2xx answer (stage=delivered).",
    labelNames: ["stage"] as const,
    buckets: SECONDS_LAG,
    registers: [this.registry],
  });
  readonly accepted = new Counter({
    name: "webhook_notifications_accepted_total",
    help: "Notifications accepted (stored and queued): by publishes, samples, redeliveries and recoveries, by event type.",
    labelNames: ["event"] as const,
    registers: [this.registry],
  });
  readonly fanout = new Histogram({
    name: "webhook_publish_fanout",
    help: "Subscriptions one publish fanned out to (0: nobody subscribes to the event).",
    buckets: FANOUT,
    registers: [this.registry],
  });
  readonly subscriptionsDisabled = new Counter({
    name: "webhook_subscriptions_disabled_total",
    help: "Subscriptions the service disabled by itself, by reason (gone: the receiver answered 410; failing: every delivery failed too long).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly rpcRequests = new Counter({
    name: "webhook_api_requests_total",
    help: "API calls (Connect, gRPC, gRPC-Web and REST alike) by RPC and Connect code.",
    labelNames: ["rpc", "code"] as const,
    registers: [this.registry],
  });
  readonly rpcDuration = new Histogram({
    name: "webhook_api_request_duration_seconds",
    help: "API call handling time, by RPC.",
    labelNames: ["rpc"] as const,
    buckets: SECONDS_RPC,
    registers: [this.registry],
  });

  readonly retentionDeleted = new Counter({
    name: "webhook_retention_deleted_rows_total",
    help: "Rows the retention purge deleted, by table (notifications, attempts, idempotency_keys).",
    labelNames: ["table"] as const,
    registers: [this.registry],
  });

  #sources: QueueSources | undefined;
  /** When the oldest notification kept was created, as the last purge found (null: none). */
  #oldestKept: Date | null = null;
  /** The read of the job store's counts under way: the queue gauges of one scrape (collected together) share it. */
  #counts: Promise<JobCounts | undefined> | undefined;

  constructor(options: { onReadError: (error: unknown) => void }) {
    collectDefaultMetrics({ register: this.registry });
    const queueGauge = (name: string, help: string, pick: (counts: JobCounts, now: number) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect: async function (this: Gauge) {
          const counts = await metrics.#readCounts(options.onReadError);
          // Left as last read when the store cannot answer.
          if (counts) this.set(pick(counts, Date.now()));
        },
      });
    const laneGauge = (name: string, help: string, pick: (occupancy: LaneOccupancy) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect(this: Gauge) {
          const occupancy = metrics.#sources?.occupancy();
          if (occupancy) this.set(pick(occupancy));
        },
      });
    const metrics = this;
    queueGauge("webhook_queue_pending", "Delivery jobs due now and not yet taken, across all instances.", (counts) => counts.due);
    queueGauge(
      "webhook_queue_scheduled",
      "Delivery jobs waiting for a later time (retries), across all instances.",
      (counts) => counts.scheduled,
    );
    queueGauge(
      "webhook_queue_running",
      "Delivery jobs locked by an instance (running or about to), across all instances.",
      (counts) => counts.locked,
    );
    queueGauge(
      "webhook_queue_oldest_pending_age_seconds",
      "How long the job longest due has waited past its due time (0: none is due).",
      (counts, now) => (counts.oldestDueAt ? Math.max(0, (now - counts.oldestDueAt.getTime()) / 1000) : 0),
    );
    new Gauge({
      name: "webhook_retention_oldest_notification_age_seconds",
      help: "Age of the oldest notification kept (pending ones too), as of the last retention purge (0: none).",
      registers: [this.registry],
      collect(this: Gauge) {
        this.set(metrics.#oldestKept ? Math.max(0, (Date.now() - metrics.#oldestKept.getTime()) / 1000) : 0);
      },
    });
    laneGauge("webhook_deliveries_in_flight", "Requests to receivers in flight from this instance.", (lanes) => lanes.inFlight);
    laneGauge(
      "webhook_deliveries_waiting",
      "Jobs this instance holds waiting for their endpoint or client to have a free slot.",
      (lanes) => lanes.waiting,
    );
    laneGauge(
      "webhook_endpoints_in_flight",
      "Endpoints (client and URL origin) with a request in flight from this instance.",
      (lanes) => lanes.endpointsInFlight,
    );
    laneGauge(
      "webhook_endpoints_at_concurrency_cap",
      "Endpoints with as many requests in flight from this instance as their concurrency limit allows.",
      (lanes) => lanes.endpointsAtLimit,
    );
  }

  purged(deleted: PurgedRows): void {
    for (const [table, rows] of Object.entries(deleted)) this.retentionDeleted.inc({ table }, rows);
  }

  oldestKept(createdAt: Date | undefined): void {
    this.#oldestKept = createdAt ?? null;
  }

  /** Where the queue and lane gauges read from (the delivery engine, built after the metrics it reports to). */
  watch(sources: QueueSources): void {
    this.#sources = sources;
  }

  #readCounts(onError: (error: unknown) => void): Promise<JobCounts | undefined> {
    const sources = this.#sources;
    if (!sources) return Promise.resolve(undefined);
    this.#counts ??= sources
      .counts()
      .catch((error: unknown) => {
        onError(error);
        return undefined;
      })
      .finally(() => {
        this.#counts = undefined;
      });
    return this.#counts;
  }
}
