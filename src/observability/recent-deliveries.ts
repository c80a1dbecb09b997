import type { DeliveryEvent, DeliveryObserver } from "../domain/delivery-events.js";

const MINUTE_MS = 60_000;
/**
 * The endpoints one minute keeps, each by at most URL_KEPT characters of its
 * URL; past that a minute's new URLs are not timed, nor more disabled
 * subscriptions listed (bounds on memory over the hour: about 15 MB at most).
 */
const MAX_ENDPOINTS_PER_MINUTE = 1_000;
const URL_KEPT = 200;
const MAX_DISABLED_PER_MINUTE = 100;
const SLOWEST_SHOWN = 10;

export interface EndpointLatency {
  url: string;
  attempts: number;
  averageMs: number;
  maxMs: number;
  failedAttempts: number;
}

export interface DisabledRecord {
  subscriptionId: string;
  clientId: string;
  event: string;
  url: string;
  reason: string;
  at: Date;
}

/** What the operator's dashboard shows: the window's counts, slowest endpoints and disabled subscriptions. */
export interface DeliverySummary {
  since: Date;
  delivered: number;
  failed: number;
  failedAttempts: number;
  slowestEndpoints: EndpointLatency[];
  disabled: DisabledRecord[];
}

interface Timing {
  attempts: number;
  totalMs: number;
  maxMs: number;
  failedAttempts: number;
}

/** One minute of deliveries. */
interface Minute {
  start: number;
  delivered: number;
  failed: number;
  failedAttempts: number;
  endpoints: Map<string, Timing>;
  disabled: DisabledRecord[];
}

/**
 * The last hour of delivery events, as the metrics observer sees them, kept
 * in one-minute buckets so that memory is bounded by minutes and distinct
 * URLs rather than by traffic. What this instance observed only: like its
 * counters, it starts empty when the process starts.
 */
export class RecentDeliveries implements DeliveryObserver {
  readonly #minutes: Minute[] = [];
  readonly #startedAt: number;

  constructor(private readonly options: { windowMs: number; now: () => number } = { windowMs: 60 * MINUTE_MS, now: () => Date.now() }) {
    this.#startedAt = options.now();
  }

  observe(event: DeliveryEvent): void {
    switch (event.kind) {
      case "attempt-finished": {
        const minute = this.#minute(event.at.getTime());
        if (event.status === "delivered") minute.delivered++;
        if (event.status === "failed") minute.failed++;
        if (!event.attempt.succeeded) minute.failedAttempts++;
        // An abandoned attempt sent nothing, so it timed no endpoint.
        if (!event.sent || !event.subscription) return;
        const url = event.subscription.url.slice(0, URL_KEPT) || "(relay)";
        let timing = minute.endpoints.get(url);
        if (!timing) {
          if (minute.endpoints.size >= MAX_ENDPOINTS_PER_MINUTE) return;
          timing = { attempts: 0, totalMs: 0, maxMs: 0, failedAttempts: 0 };
          minute.endpoints.set(url, timing);
        }
        timing.attempts++;
        timing.totalMs += event.attempt.durationMs;
        timing.maxMs = Math.max(timing.maxMs, event.attempt.durationMs);
        if (!event.attempt.succeeded) timing.failedAttempts++;
        return;
      }
      case "subscription-disabled": {
        const { subscription } = event;
        const { disabled } = this.#minute(event.at.getTime());
        if (disabled.length >= MAX_DISABLED_PER_MINUTE) return;
        disabled.push({
          subscriptionId: subscription.id,
          clientId: subscription.clientId,
          event: subscription.event,
          url: subscription.url,
          reason: event.reason,
          at: event.at,
        });
        return;
      }
      default:
        return;
    }
  }

  summary(): DeliverySummary {
    const now = this.options.now();
    this.#prune(now);
    const endpoints = new Map<string, Timing>();
    const summary: DeliverySummary = {
      since: new Date(Math.max(now - this.options.windowMs, this.#startedAt)),
      delivered: 0,
      failed: 0,
      failedAttempts: 0,
      slowestEndpoints: [],
      disabled: [],
    };
    for (const minute of this.#minutes) {
      summary.delivered += minute.delivered;
      summary.failed += minute.failed;
      summary.failedAttempts += minute.failedAttempts;
      summary.disabled.push(...minute.disabled);
      for (const [url, timing] of minute.endpoints) {
        const sum = endpoints.get(url) ?? { attempts: 0, totalMs: 0, maxMs: 0, failedAttempts: 0 };
        sum.attempts += timing.attempts;
        sum.totalMs += timing.totalMs;
        sum.maxMs = Math.max(sum.maxMs, timing.maxMs);
        sum.failedAttempts += timing.failedAttempts;
        endpoints.set(url, sum);
      }
    }
    summary.disabled.sort((a, b) => b.at.getTime() - a.at.getTime());
    summary.slowestEndpoints = [...endpoints]
      .map(([url, sum]) => ({
        url,
        attempts: sum.attempts,
        averageMs: Math.round(sum.totalMs / sum.attempts),
        maxMs: sum.maxMs,
        failedAttempts: sum.failedAttempts,
      }))
      .sort((a, b) => b.averageMs - a.averageMs || b.maxMs - a.maxMs)
      .slice(0, SLOWEST_SHOWN);
    return summary;
  }

  /** The bucket of the minute `at` falls in (events arrive nearly in order: a late one joins the newest bucket). */
  #minute(at: number): Minute {
    const start = at - (at % MINUTE_MS);
    const newest = this.#minutes.at(-1);
    if (newest && newest.start >= start) return newest;
    this.#prune(at);
    const minute: Minute = { start, delivered: 0, failed: 0, failedAttempts: 0, endpoints: new Map(), disabled: [] };
    this.#minutes.push(minute);
    return minute;
  }

  #prune(now: number): void {
    const oldest = now - this.options.windowMs;
    while (this.#minutes.length > 0 && (this.#minutes[0] as Minute).start + MINUTE_MS <= oldest) this.#minutes.shift();
  }
}
