import type { AnyBulkWriteOperation, Collection, Db, Document } from "mongodb";
import {
  addAttempts,
  addCounts,
  type DeliveryStatsStore,
  type EndpointCounts,
  emptyCounts,
  emptyEndpointCounts,
  type FailingSubscription,
  LATENCY_BOUNDS_MS,
  STEP_SECONDS,
  type StatsCounts,
  type StatsQuery,
  type StatsRead,
  type StatsStep,
  stepIndexOf,
  stepStart,
  stepsOf,
} from "../../domain/delivery-stats.js";
import type { DeliveryAttempt, NotificationStatus } from "../../domain/model.js";
import { collections, isString } from "./documents.js";

export const DELIVERY_STATS = "wh_delivery_stats";

const LATENCY_FIELDS = LATENCY_BOUNDS_MS.map((bound) => `le_${bound}`);
const COUNT_FIELDS = ["accepted", "delivered", "failed", "attempts", "failedAttempts", ...LATENCY_FIELDS] as const;

/**
 * One endpoint's counts over one minute or hour (as the SQL table
 * wh_delivery_stats): `step` (seconds), `start`, `endpoint`, `clientId`,
 * and the counts (COUNT_FIELDS). Counts are added with `$inc` in an upsert;
 * two instances' first upserts of one step may each make a document, and
 * reads sum every document of a step, so that costs nothing.
 */
type StatsDoc = Document;

export function statsCollection(db: Db): Collection<StatsDoc> {
  return db.collection<StatsDoc>(DELIVERY_STATS);
}

/** The upserts adding `counts` at `at` to an endpoint's minute and hour documents. */
function increments(at: Date, endpoint: string, clientId: string, counts: Record<string, number>): AnyBulkWriteOperation<StatsDoc>[] {
  return (Object.keys(STEP_SECONDS) as StatsStep[]).map((step) => ({
    updateOne: {
      filter: { step: STEP_SECONDS[step], start: stepStart(at, step), endpoint },
      update: { $inc: counts, $setOnInsert: { clientId } },
      upsert: true,
    },
  }));
}

/**
 * Adds accepted notifications to their endpoints' statistics, after they
 * are stored: a failure here loses a count, never a notification.
 */
export async function countAccepted(
  stats: Collection<StatsDoc>,
  accepted: ReadonlyArray<{ endpoint: string; notification: { clientId: string; createdAt: Date } }>,
): Promise<void> {
  if (accepted.length === 0) return;
  const groups = new Map<string, { endpoint: string; clientId: string; at: Date; count: number }>();
  for (const { endpoint, notification } of accepted) {
    const key = `${stepStart(notification.createdAt, "minute").getTime()} ${endpoint}`;
    const group = groups.get(key) ?? { endpoint, clientId: notification.clientId, at: notification.createdAt, count: 0 };
    group.count++;
    groups.set(key, group);
  }
  await stats.bulkWrite(
    [...groups.values()].flatMap((group) => increments(group.at, group.endpoint, group.clientId, { accepted: group.count })),
    { ordered: false },
  );
}

/** Adds one recorded attempt, and the status it moved its notification to, to the statistics. */
export async function countAttempt(
  stats: Collection<StatsDoc>,
  attempt: DeliveryAttempt,
  status: NotificationStatus,
  job: { endpoint: string; clientId: string },
): Promise<void> {
  const counts: Record<string, number> = { attempts: 1 };
  if (status === "delivered") counts.delivered = 1;
  if (status === "failed") counts.failed = 1;
  if (!attempt.succeeded) counts.failedAttempts = 1;
  for (const [i, bound] of LATENCY_BOUNDS_MS.entries()) {
    if (attempt.durationMs <= bound) counts[LATENCY_FIELDS[i] as string] = 1;
  }
  await stats.bulkWrite(increments(attempt.startedAt, job.endpoint, job.clientId, counts), { ordered: false });
}

export class MongoDeliveryStatsStore implements DeliveryStatsStore {
  readonly #stats: Collection<StatsDoc>;

  constructor(private readonly db: Db) {
    this.#stats = statsCollection(db);
  }

  /** Summed per step and endpoint by the database, then per step and per endpoint here. */
  async read(query: StatsQuery): Promise<StatsRead> {
    if (query.clientId !== undefined && !isString(query.clientId)) throw new TypeError("clientId must be a string");
    const match: Record<string, unknown> = { step: STEP_SECONDS[query.step], start: { $gte: query.from, $lt: query.to } };
    if (query.clientId !== undefined) match.clientId = query.clientId;
    const sums = Object.fromEntries(COUNT_FIELDS.map((field) => [field, { $sum: { $ifNull: [`$${field}`, 0] } }]));
    const cells = await this.#stats
      .aggregate<Record<string, number> & { _id: { start: Date; endpoint: string }; clientId: string }>([
        { $match: match },
        { $group: { _id: { start: "$start", endpoint: "$endpoint" }, clientId: { $first: "$clientId" }, ...sums } },
      ])
      .toArray();
    const steps = new Map<number, StatsCounts & { start: Date }>();
    const endpoints = new Map<string, EndpointCounts>();
    const stepCount = stepsOf(query);
    for (const cell of cells) {
      const counts: StatsCounts = {
        accepted: cell.accepted ?? 0,
        delivered: cell.delivered ?? 0,
        failed: cell.failed ?? 0,
        attempts: cell.attempts ?? 0,
        failedAttempts: cell.failedAttempts ?? 0,
        latencyAtMost: LATENCY_FIELDS.map((field) => cell[field] ?? 0),
      };
      const { start, endpoint } = cell._id;
      const step = steps.get(start.getTime()) ?? { start, ...emptyCounts() };
      steps.set(start.getTime(), addCounts(step, counts));
      const health = endpoints.get(endpoint) ?? emptyEndpointCounts(endpoint, cell.clientId, stepCount);
      const index = stepIndexOf(query, start);
      health.attemptsPerStep[index] = (health.attemptsPerStep[index] ?? 0) + counts.attempts;
      health.failedAttemptsPerStep[index] = (health.failedAttemptsPerStep[index] ?? 0) + counts.failedAttempts;
      endpoints.set(endpoint, addAttempts(health, counts));
    }
    return { steps: [...steps.values()], endpoints: [...endpoints.values()] };
  }

  async failing(clientId?: string): Promise<FailingSubscription[]> {
    const filter: Record<string, unknown> = { failingSince: { $ne: null } };
    if (clientId !== undefined) filter.clientId = clientId;
    const docs = await collections(this.db)
      .subscriptions.find(filter, { projection: { clientId: 1, url: 1, failingSince: 1 } })
      .toArray();
    return docs.flatMap((doc) => (doc.failingSince ? [{ clientId: doc.clientId, url: doc.url, failingSince: doc.failingSince }] : []));
  }

  pending(clientId?: string): Promise<number> {
    const filter: Record<string, unknown> = { job: { $exists: true } };
    if (clientId !== undefined) filter.clientId = clientId;
    return collections(this.db).notifications.countDocuments(filter);
  }

  /** Nothing to merge: writers share documents (`$inc` makes them wait for no one). */
  async merge(): Promise<void> {}

  async purge(step: StatsStep, before: Date): Promise<number> {
    const { deletedCount } = await this.#stats.deleteMany({ step: STEP_SECONDS[step], start: { $lt: before } });
    return deletedCount;
  }
}
