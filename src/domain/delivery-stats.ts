import { endpointOf } from "./endpoint.js";
import { NotFoundError, ValidationError } from "./errors.js";
import type { Client } from "./model.js";

/**
 * Delivery statistics, read from the store so that they cover every
 * instance sharing the database and outlive a restart. The job store counts
 * as it writes: each accepted notification, and each attempt as it is
 * recorded, adds to a row per minute and a row per hour of its endpoint
 * (client and URL origin). A range is read from those rows: the last hour
 * per minute, a day or a week per hour.
 */

/**
 * Upper bounds of the attempt latency histogram, in milliseconds (those of
 * the webhook_delivery_attempt_duration_seconds metric): each row counts
 * the attempts that took at most each bound, so any range's percentiles
 * come from summed rows.
 */
export const LATENCY_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 15000, 30000, 60000] as const;

/** The widths rows are kept at, in seconds. */
export const STEP_SECONDS = { minute: 60, hour: 3600 } as const;
export type StatsStep = keyof typeof STEP_SECONDS;

/** The ranges one can ask for: how far back, and the width of each point. */
export const STATS_RANGES = {
  "1h": { spanMs: 3_600_000, step: "minute" },
  "24h": { spanMs: 86_400_000, step: "hour" },
  "7d": { spanMs: 7 * 86_400_000, step: "hour" },
} as const satisfies Record<string, { spanMs: number; step: StatsStep }>;
export type StatsRange = keyof typeof STATS_RANGES;

/** Minute rows are kept a day; hour rows a week, or the service's retention when that is longer. */
export const MINUTE_ROWS_KEPT_MS = 86_400_000;
export const MIN_HOUR_ROWS_KEPT_MS = 7 * 86_400_000;

/** The start of the step of `step` that `at` falls in. */
export function stepStart(at: Date, step: StatsStep): Date {
  const ms = STEP_SECONDS[step] * 1000;
  return new Date(Math.floor(at.getTime() / ms) * ms);
}

/** A range as asked for ("" is the last hour). */
export function statsRangeOf(text: string): StatsRange {
  if (text === "") return "1h";
  if (Object.hasOwn(STATS_RANGES, text)) return text as StatsRange;
  throw new ValidationError(`range must be one of ${Object.keys(STATS_RANGES).join(", ")} (got "${text}")`, "range");
}

/** What a row (or a sum of rows) counts. */
export interface StatsCounts {
  /** Notifications accepted. */
  accepted: number;
  /** Notifications delivered (a 2xx answer). */
  delivered: number;
  /** Notifications that failed for good. */
  failed: number;
  attempts: number;
  failedAttempts: number;
  /** Attempts that took at most each of LATENCY_BOUNDS_MS, in that order. */
  latencyAtMost: number[];
}

/** A step of the range: every endpoint's rows summed. */
export interface StepCounts extends StatsCounts {
  start: Date;
}

/** What an endpoint's health is judged by. */
export type AttemptCounts = Pick<StatsCounts, "attempts" | "failedAttempts" | "latencyAtMost">;

/** An endpoint over the range: its attempts summed, and its attempts at each step of the range. */
export interface EndpointCounts extends AttemptCounts {
  clientId: string;
  /** As endpoint.ts names it: the client and the URL origin. */
  endpoint: string;
  /** One figure for each step of the range, oldest first (stepsOf), 0 where it has no rows. */
  attemptsPerStep: number[];
  failedAttemptsPerStep: number[];
}

/** A range's rows, summed by step and by endpoint (steps and endpoints without rows are left out). */
export interface StatsRead {
  steps: StepCounts[];
  endpoints: EndpointCounts[];
}

export interface StatsQuery {
  step: StatsStep;
  /** Steps starting at or after this, and before `to`. */
  from: Date;
  to: Date;
  /** Only this client's rows; absent: every client's. */
  clientId?: string;
}

/** How many steps a query's range holds. */
export function stepsOf(query: StatsQuery): number {
  return Math.round((query.to.getTime() - query.from.getTime()) / (STEP_SECONDS[query.step] * 1000));
}

/** Which step of the query's range `start` falls in (0 for the first). */
export function stepIndexOf(query: StatsQuery, start: Date): number {
  return Math.floor((start.getTime() - query.from.getTime()) / (STEP_SECONDS[query.step] * 1000));
}

/** A subscription in a failure streak, for its endpoint's "failing since". */
export interface FailingSubscription {
  clientId: string;
  url: string;
  failingSince: Date;
}

/** Where the counts are kept; written by the job store, read and kept in shape here. */
export interface DeliveryStatsStore {
  read(query: StatsQuery): Promise<StatsRead>;
  failing(clientId?: string): Promise<FailingSubscription[]>;
  /** Notifications not yet delivered nor failed for good (every instance's). */
  pending(clientId?: string): Promise<number>;
  /** Deletes rows of `step` starting before `before`; answers how many. */
  purge(step: StatsStep, before: Date): Promise<number>;
  /**
   * Merges the rows of each step of `step` that started before `before`
   * into one per endpoint, where a store keeps several (one per writer) so
   * that writers never wait for each other: a range then reads one row per
   * step and endpoint.
   */
  merge(step: StatsStep, before: Date): Promise<void>;
}

export interface StatsPoint extends Omit<StatsCounts, "latencyAtMost"> {
  start: Date;
  latencyMs: { p50?: number; p95?: number; p99?: number };
}

export interface EndpointHealth {
  clientId: string;
  origin: string;
  attempts: number;
  failedAttempts: number;
  /** Successful attempts over attempts; absent without attempts. */
  successRate?: number;
  latencyP95Ms?: number;
  /** The earliest failure streak among its subscriptions still failing. */
  failingSince?: Date;
  /** Attempts and failed attempts at each point of the range, in order. */
  attemptsPerStep: number[];
  failedAttemptsPerStep: number[];
}

export interface DeliveryStatsReport {
  range: StatsRange;
  stepSeconds: number;
  from: Date;
  points: StatsPoint[];
  totals: StatsPoint;
  pending: number;
  endpoints: EndpointHealth[];
}

/**
 * The latency below which a fraction `q` of the attempts fell, from
 * cumulative bucket counts, interpolating within the bucket as Prometheus'
 * histogram_quantile does; past the last bound, the last bound. Undefined
 * without attempts.
 */
export function latencyQuantile(latencyAtMost: readonly number[], attempts: number, q: number): number | undefined {
  if (attempts === 0) return undefined;
  const rank = q * attempts;
  let lowerBound = 0;
  let below = 0;
  for (const [i, bound] of LATENCY_BOUNDS_MS.entries()) {
    const atMost = latencyAtMost[i] ?? 0;
    if (atMost >= rank) {
      const inBucket = atMost - below;
      return inBucket === 0 ? bound : lowerBound + ((bound - lowerBound) * (rank - below)) / inBucket;
    }
    lowerBound = bound;
    below = atMost;
  }
  return lowerBound;
}

export function emptyCounts(): StatsCounts {
  return { accepted: 0, delivered: 0, failed: 0, attempts: 0, failedAttempts: 0, latencyAtMost: LATENCY_BOUNDS_MS.map(() => 0) };
}

/** An endpoint with nothing counted yet: 0 at each of a range's `steps`. */
export function emptyEndpointCounts(endpoint: string, clientId: string, steps: number): EndpointCounts {
  const { attempts, failedAttempts, latencyAtMost } = emptyCounts();
  return {
    endpoint,
    clientId,
    attempts,
    failedAttempts,
    latencyAtMost,
    attemptsPerStep: new Array<number>(steps).fill(0),
    failedAttemptsPerStep: new Array<number>(steps).fill(0),
  };
}

/** Adds `counts` into `into`, and answers it. */
export function addCounts<T extends StatsCounts>(into: T, counts: StatsCounts): T {
  into.accepted += counts.accepted;
  into.delivered += counts.delivered;
  into.failed += counts.failed;
  return addAttempts(into, counts);
}

/** Adds the attempts of `counts` into `into`, and answers it. */
export function addAttempts<T extends AttemptCounts>(into: T, counts: AttemptCounts): T {
  into.attempts += counts.attempts;
  into.failedAttempts += counts.failedAttempts;
  for (const [i, count] of counts.latencyAtMost.entries()) into.latencyAtMost[i] = (into.latencyAtMost[i] ?? 0) + count;
  return into;
}

function pointOf(start: Date, counts: StatsCounts): StatsPoint {
  const { latencyAtMost, ...figures } = counts;
  const quantile = (q: number) => latencyQuantile(latencyAtMost, counts.attempts, q);
  const latencyMs: StatsPoint["latencyMs"] = {};
  for (const [name, q] of [
    ["p50", 0.5],
    ["p95", 0.95],
    ["p99", 0.99],
  ] as const) {
    const value = quantile(q);
    if (value !== undefined) latencyMs[name] = value;
  }
  return { start, ...figures, latencyMs };
}

/** Reads a range's figures for the operator (every client) or for one client. */
export class DeliveryStats {
  constructor(
    private readonly store: DeliveryStatsStore,
    /** The clients (ports.ts' ClientStore, which holds this module's port: named structurally, to import no circle). */
    private readonly clients: { get(id: string): Promise<Client | undefined> },
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** For the operator: every client's figures, or one client's (which must exist). */
  async report(range: StatsRange, clientId?: string): Promise<DeliveryStatsReport> {
    if (clientId !== undefined && !(await this.clients.get(clientId))) throw new NotFoundError(`no client ${clientId}`);
    return this.#report(range, clientId);
  }

  /** For a client: its own figures. */
  ownReport(range: StatsRange, clientId: string): Promise<DeliveryStatsReport> {
    return this.#report(range, clientId);
  }

  async #report(range: StatsRange, clientId?: string): Promise<DeliveryStatsReport> {
    const { spanMs, step } = STATS_RANGES[range];
    const stepMs = STEP_SECONDS[step] * 1000;
    // Whole steps, the current one last.
    const to = Math.floor(this.now().getTime() / stepMs) * stepMs + stepMs;
    const from = to - spanMs;
    const steps = spanMs / stepMs;
    const query: StatsQuery = { step, from: new Date(from), to: new Date(to), ...(clientId === undefined ? {} : { clientId }) };
    const [read, failing, pending] = await Promise.all([
      this.store.read(query),
      this.store.failing(clientId),
      this.store.pending(clientId),
    ]);
    const byStep = Array.from({ length: steps }, emptyCounts);
    const total = emptyCounts();
    for (const step of read.steps) {
      const point = byStep[stepIndexOf(query, step.start)];
      if (!point) continue;
      addCounts(point, step);
      addCounts(total, step);
    }
    const byEndpoint = new Map(read.endpoints.map((endpoint) => [endpoint.endpoint, endpoint]));
    const failingSince = new Map<string, Date>();
    for (const subscription of failing) {
      const endpoint = endpointOf(subscription.clientId, subscription.url);
      const earliest = failingSince.get(endpoint);
      if (!earliest || subscription.failingSince < earliest) failingSince.set(endpoint, subscription.failingSince);
      // A failing endpoint without attempts in the range is shown too.
      if (!byEndpoint.has(endpoint)) byEndpoint.set(endpoint, emptyEndpointCounts(endpoint, subscription.clientId, steps));
    }

    const endpoints = [...byEndpoint.values()].map((counts): EndpointHealth => {
      const p95 = latencyQuantile(counts.latencyAtMost, counts.attempts, 0.95);
      const since = failingSince.get(counts.endpoint);
      return {
        clientId: counts.clientId,
        origin: counts.endpoint.slice(counts.clientId.length + 1),
        attempts: counts.attempts,
        failedAttempts: counts.failedAttempts,
        ...(counts.attempts > 0 ? { successRate: (counts.attempts - counts.failedAttempts) / counts.attempts } : {}),
        ...(p95 === undefined ? {} : { latencyP95Ms: p95 }),
        ...(since ? { failingSince: since } : {}),
        attemptsPerStep: counts.attemptsPerStep,
        failedAttemptsPerStep: counts.failedAttemptsPerStep,
      };
    });
    // Worst first: the lowest success rate, then the slowest.
    endpoints.sort(
      (a, b) =>
        (a.successRate ?? 1) - (b.successRate ?? 1) ||
        (b.latencyP95Ms ?? 0) - (a.latencyP95Ms ?? 0) ||
        a.clientId.localeCompare(b.clientId) ||
        a.origin.localeCompare(b.origin),
    );
    return {
      range,
      stepSeconds: STEP_SECONDS[step],
      from: new Date(from),
      points: byStep.map((counts, i) => pointOf(new Date(from + i * stepMs), counts)),
      totals: pointOf(new Date(from), total),
      pending,
      endpoints,
    };
  }
}

/** How long hour rows are kept: a week, or the longest retention (the service's or a client's) when longer (minute rows: MINUTE_ROWS_KEPT_MS). */
export function hourRowsKeptMs(retentionMs: number): number {
  return Math.max(MIN_HOUR_ROWS_KEPT_MS, retentionMs);
}
