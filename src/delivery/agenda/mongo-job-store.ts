import type { Collection, Db } from "mongodb";
import type { Notification } from "../../domain/model.js";
import {
  type AttemptDoc,
  collections,
  isDuplicateKey,
  type NotificationDoc,
  optional,
  toNotificationDoc,
} from "../../store/mongo/documents.js";
import { recordAttempt } from "../../store/mongo/notifications.js";
import { endpointOf } from "../endpoint.js";
import { type LockedBatch, type LockRequest, scanWindow } from "../job-source.js";
import type {
  DeliveryJobStore,
  FinishedRun,
  JobCounts,
  JobState,
  LockedJob,
  LockRenewal,
  NewDelivery,
  RetriedRun,
  StoredJob,
} from "./delivery-job-store.js";

/** A notification's job, inside the notification's document: stored and queued in one atomic write. */
interface JobDoc {
  endpoint: string;
  clientId: string;
  nextRunAt: Date | null;
  lockedAt: Date | null;
  /** The lock's holder and batch (`owner#n`), to read back exactly what one lock took. */
  lockedBy: string | null;
  /** Who inserted it: a change-stream listener skips its own instance's inserts. */
  insertedBy: string;
  lastRunAt?: Date;
  lastFinishedAt?: Date;
  failCount: number;
  failReason?: string;
  failedAt?: Date;
  traceContext?: string;
}

type Doc = NotificationDoc & { job?: JobDoc };

/** Scheduled so as not to run until the idempotency key is settled; a crash meanwhile only delays them this long. */
const HELD_FOR_KEY_MS = 60_000;

function toJob(id: string, job: JobDoc): StoredJob {
  return {
    id,
    endpoint: job.endpoint,
    clientId: job.clientId,
    nextRunAt: job.nextRunAt,
    failCount: job.failCount,
    ...optional("lockedAt", job.lockedAt),
    ...optional("lastModifiedBy", job.lockedBy?.split("#")[0]),
    ...optional("lastRunAt", job.lastRunAt),
    ...optional("lastFinishedAt", job.lastFinishedAt),
    ...optional("failReason", job.failReason),
    ...optional("failedAt", job.failedAt),
    ...optional("traceContext", job.traceContext),
  };
}

function toDoc(notification: Notification, job: JobDoc): Doc {
  return { ...toNotificationDoc(notification), job };
}

/**
 * In the order given (oldest due first), at most each endpoint's budget,
 * then each client's among what its endpoints' budgets let through, at most
 * `limit` in all; and the endpoints and clients whose budget passed over some.
 */
export function withinBudgets<T extends { endpoint: string; clientId: string }>(
  candidates: readonly T[],
  request: LockRequest,
): { chosen: T[]; passedOver: { endpoints: string[]; clients: string[] } } {
  const endpoints = new Map<string, number>();
  const clients = new Map<string, number>();
  const passedEndpoints = new Set<string>();
  const passedClients = new Set<string>();
  const chosen: T[] = [];
  for (const candidate of candidates) {
    if (chosen.length >= request.limit) break;
    const endpointTaken = endpoints.get(candidate.endpoint) ?? 0;
    if (endpointTaken >= (request.endpointBudgets.get(candidate.endpoint) ?? request.defaultPerEndpoint)) {
      passedEndpoints.add(candidate.endpoint);
      continue;
    }
    endpoints.set(candidate.endpoint, endpointTaken + 1);
    const clientTaken = clients.get(candidate.clientId) ?? 0;
    clients.set(candidate.clientId, clientTaken + 1);
    if (clientTaken >= (request.clientBudgets.get(candidate.clientId) ?? request.defaultPerClient)) {
      passedClients.add(candidate.clientId);
      continue;
    }
    chosen.push(candidate);
  }
  return { chosen, passedOver: { endpoints: [...passedEndpoints], clients: [...passedClients] } };
}

/**
 * Delivery jobs in MongoDB: each pending notification's document carries
 * its job (`job`), removed once the notification is delivered or has failed
 * for good. Written against the driver's documented API; no MongoDB server
 * runs on our build machines, so its contract tests run only where
 * MONGODB_URL is set.
 */
export class MongoJobStore implements DeliveryJobStore {
  readonly #notifications: Collection<Doc>;
  readonly #attempts: Collection<AttemptDoc>;
  #lockBatches = 0;

  constructor(
    private readonly db: Db,
    private readonly options: { owner: string; lockLifetimeMs: number },
  ) {
    this.#notifications = db.collection<Doc>(collections(db).notifications.collectionName);
    this.#attempts = collections(db).attempts;
  }

  async prepare(): Promise<void> {
    await this.#notifications.createIndexes([
      {
        key: { "job.lockedAt": 1, "job.nextRunAt": 1 },
        name: "wh_notifications_job_idx",
        partialFilterExpression: { job: { $exists: true } },
      },
    ]);
    // Jobs an older version kept in Agenda's own collection, and notifications it never queued, get a job here.
    const legacy = this.db.collection<{ name: string; data?: { notificationId?: string }; nextRunAt?: Date | null; failCount?: number }>(
      "wh_agenda_jobs",
    );
    for await (const old of legacy.find({ name: "deliver-notification" })) {
      const id = old.data?.notificationId;
      if (typeof id === "string") await this.#giveJob({ _id: id }, old.nextRunAt ?? new Date(), old.failCount ?? 0);
      await legacy.deleteOne({ _id: old._id });
    }
    await this.#giveJob({ scheduled: false }, new Date(), 0);
    // A job left without a schedule would never be due again: it is due now.
    await this.#notifications.updateMany(
      { job: { $exists: true }, "job.lockedAt": null, "job.nextRunAt": null },
      { $set: { "job.nextRunAt": new Date() } },
    );
  }

  /** Gives the pending notifications matching `filter` that have no job a due, unlocked one. */
  async #giveJob(filter: Record<string, unknown>, nextRunAt: Date, failCount: number): Promise<void> {
    const subscriptions = collections(this.db).subscriptions;
    for await (const doc of this.#notifications.find({ ...filter, status: "pending", job: { $exists: false } })) {
      const subscription = await subscriptions.findOne({ _id: doc.subscriptionId });
      if (!subscription) continue;
      const job: JobDoc = {
        endpoint: endpointOf(doc.clientId, subscription.url),
        clientId: doc.clientId,
        nextRunAt,
        lockedAt: null,
        lockedBy: null,
        insertedBy: this.options.owner,
        failCount,
      };
      await this.#notifications.updateOne({ _id: doc._id, job: { $exists: false } }, { $set: { job, scheduled: true } });
    }
  }

  async lockDue(request: LockRequest): Promise<LockedBatch<LockedJob>> {
    const now = new Date();
    const deadline = new Date(now.getTime() - this.options.lockLifetimeMs);
    const scan = scanWindow(request);
    const none = (budgets: ReadonlyMap<string, number>) => [...budgets].filter(([, budget]) => budget === 0).map(([key]) => key);
    const project = { _id: 1, "job.endpoint": 1, "job.clientId": 1, "job.nextRunAt": 1 } as const;
    type Candidate = { _id: string; job: { endpoint: string; clientId: string; nextRunAt: Date | null } };
    // `job: {$exists: true}` lets the partial index serve these reads.
    const due = await this.#notifications
      .find({
        job: { $exists: true },
        "job.lockedAt": null,
        "job.nextRunAt": { $lte: now },
        "job.endpoint": { $nin: none(request.endpointBudgets) },
        "job.clientId": { $nin: none(request.clientBudgets) },
      })
      .sort({ "job.nextRunAt": 1 })
      .limit(scan)
      .project<Candidate>(project)
      .toArray();
    const expired = await this.#notifications
      .find({
        job: { $exists: true },
        "job.lockedAt": { $lte: deadline },
        "job.endpoint": { $nin: none(request.endpointBudgets) },
        "job.clientId": { $nin: none(request.clientBudgets) },
      })
      .sort({ "job.lockedAt": 1 })
      .limit(request.limit)
      .project<Candidate>(project)
      .toArray();
    // Due and expired together, oldest due first: a dead instance's jobs take their turn with the rest.
    const candidates = [...due, ...expired]
      .sort((a, b) => (a.job.nextRunAt?.getTime() ?? 0) - (b.job.nextRunAt?.getTime() ?? 0))
      .map((doc) => ({ id: doc._id, endpoint: doc.job.endpoint, clientId: doc.job.clientId }));
    const { chosen, passedOver } = withinBudgets(candidates, request);
    if (chosen.length === 0) return { jobs: [], drained: due.length < scan, passedOver };
    const token = `${this.options.owner}#${++this.#lockBatches}`;
    await this.#notifications.updateMany(
      {
        _id: { $in: chosen.map((candidate) => candidate.id) },
        $or: [{ "job.lockedAt": null, "job.nextRunAt": { $lte: now } }, { "job.lockedAt": { $lte: deadline } }],
      },
      [{ $set: { "job.lockedAt": now, "job.lockedBy": token, "job.nextRunAt": { $ifNull: ["$job.nextRunAt", now] } } }],
    );
    const locked = await this.#notifications.find({ _id: { $in: chosen.map((c) => c.id) }, "job.lockedBy": token }).toArray();
    const jobs = locked.flatMap((doc) => (doc.job ? [toJob(doc._id, doc.job) as LockedJob] : []));
    jobs.sort((a, b) => (a.nextRunAt?.getTime() ?? 0) - (b.nextRunAt?.getTime() ?? 0));
    return { jobs, drained: due.length < scan, passedOver };
  }

  async unlock(jobs: readonly LockedJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.#notifications.bulkWrite(
      jobs.map((job) => ({
        updateOne: {
          filter: { _id: job.id, "job.lockedAt": job.lockedAt },
          // A job handed back left without a schedule would never be due again: it is due now.
          update: [{ $set: { "job.lockedAt": null, "job.lockedBy": null, "job.nextRunAt": { $ifNull: ["$job.nextRunAt", "$$NOW"] } } }],
        },
      })),
      { ordered: false },
    );
  }

  async insert(deliveries: readonly NewDelivery[], lockFor: (deliveries: readonly NewDelivery[]) => boolean[]): Promise<LockedJob[]> {
    if (deliveries.length === 0) return [];
    const locked = lockFor(deliveries);
    const now = new Date();
    const docs = deliveries.map((delivery, i) =>
      toDoc(delivery.notification, this.#newJob(delivery, now, locked[i] === true ? now : null)),
    );
    await this.#insertAll(docs);
    return docs.flatMap((doc) => (doc.job?.lockedAt ? [toJob(doc._id, doc.job) as LockedJob] : []));
  }

  async insertOnce(clientId: string, key: string, deliveries: readonly NewDelivery[]): Promise<{ ids: string[]; duplicate: boolean }> {
    const ids = deliveries.map((delivery) => delivery.notification.id);
    // No transaction: the notifications go in first, held back until the key is settled, so that a
    // duplicate's are taken back before anything runs them. A crash in between delays them, loses none.
    const heldUntil = new Date(Date.now() + HELD_FOR_KEY_MS);
    await this.#insertAll(deliveries.map((delivery) => toDoc(delivery.notification, this.#newJob(delivery, heldUntil, null))));
    try {
      await collections(this.db).idempotencyKeys.insertOne({ _id: { clientId, key }, notificationIds: ids, createdAt: new Date() });
    } catch (error) {
      // Any other failure leaves them to run when their hold ends: the key may have been written before the reply was lost.
      if (!isDuplicateKey(error)) throw error;
      if (ids.length > 0) await this.#notifications.deleteMany({ _id: { $in: ids } });
      const stored = await collections(this.db).idempotencyKeys.findOne({ _id: { clientId, key } });
      return { ids: stored?.notificationIds ?? [], duplicate: true };
    }
    if (ids.length > 0)
      await this.#notifications.updateMany({ _id: { $in: ids }, "job.lockedAt": null }, { $set: { "job.nextRunAt": new Date() } });
    return { ids, duplicate: false };
  }

  async renew(renewals: readonly LockRenewal[]): Promise<boolean[]> {
    return Promise.all(
      renewals.map(async (job) => {
        const { matchedCount } = await this.#notifications.updateOne(
          { _id: job.id, "job.lockedAt": job.heldLock },
          { $set: { "job.lockedAt": job.lockedAt } },
        );
        return matchedCount === 1;
      }),
    );
  }

  async save(states: readonly JobState[]): Promise<boolean[]> {
    return Promise.all(
      states.map(async (job) => {
        const { matchedCount } = await this.#notifications.updateOne(
          { _id: job.id, "job.lockedAt": job.heldLock },
          {
            $set: {
              "job.nextRunAt": job.nextRunAt,
              "job.lockedAt": null,
              "job.lockedBy": null,
              "job.lastRunAt": job.lastRunAt ?? null,
              "job.lastFinishedAt": job.lastFinishedAt ?? null,
              "job.failCount": job.failCount ?? 0,
              "job.failReason": job.failReason ?? null,
              "job.failedAt": job.failedAt ?? null,
            },
          },
        );
        return matchedCount === 1;
      }),
    );
  }

  /**
   * The attempt is recorded, then the job removed: two writes. Once the
   * attempt is recorded its run has done its part; a removal that fails
   * then leaves the job to its lock's expiry (its next run finds the
   * notification ended), rather than failing the run.
   */
  finish(runs: readonly FinishedRun[]): Promise<boolean[]> {
    return Promise.all(
      runs.map(async ({ attempt, status, heldLock }) => {
        await recordAttempt(this.#notifications, this.#attempts, attempt, status);
        return this.remove([{ id: attempt.notificationId, heldLock }]).then(
          (removed) => removed.length === 1,
          () => false,
        );
      }),
    );
  }

  /**
   * The attempt is recorded, then the job saved: two writes. A save that
   * fails once the attempt is recorded answers false (not written), as a
   * lost lock does: the run's own save at its end then writes its retry.
   */
  retry(runs: readonly RetriedRun[]): Promise<boolean[]> {
    return Promise.all(
      runs.map(async ({ attempt, state }) => {
        await recordAttempt(this.#notifications, this.#attempts, attempt, "pending");
        return this.save([state]).then(
          ([saved]) => saved === true,
          () => false,
        );
      }),
    );
  }

  async remove(jobs: ReadonlyArray<{ id: string; heldLock: Date }>): Promise<string[]> {
    const removed = await Promise.all(
      jobs.map(async (job) => {
        const { matchedCount } = await this.#notifications.updateOne(
          { _id: job.id, "job.lockedAt": job.heldLock },
          { $unset: { job: "" } },
        );
        return matchedCount === 1;
      }),
    );
    return jobs.filter((_, i) => removed[i]).map((job) => job.id);
  }

  async get(id: string): Promise<StoredJob | undefined> {
    if (typeof id !== "string") return undefined;
    const doc = await this.#notifications.findOne({ _id: id, job: { $exists: true } });
    return doc?.job ? toJob(doc._id, doc.job) : undefined;
  }

  async counts(): Promise<JobCounts> {
    const now = new Date();
    const dueFilter = { job: { $exists: true }, "job.lockedAt": null, "job.nextRunAt": { $lte: now } };
    const [due, scheduled, locked, oldest] = await Promise.all([
      this.#notifications.countDocuments(dueFilter),
      this.#notifications.countDocuments({ job: { $exists: true }, "job.lockedAt": null, "job.nextRunAt": { $gt: now } }),
      this.#notifications.countDocuments({ "job.lockedAt": { $ne: null }, job: { $exists: true } }),
      this.#notifications.findOne(dueFilter, { sort: { "job.nextRunAt": 1 }, projection: { "job.nextRunAt": 1 } }),
    ]);
    return { due, scheduled, locked, oldestDueAt: oldest?.job?.nextRunAt ?? null };
  }

  #newJob(delivery: NewDelivery, nextRunAt: Date, lockedAt: Date | null): JobDoc {
    return {
      endpoint: delivery.endpoint,
      clientId: delivery.notification.clientId,
      nextRunAt,
      lockedAt,
      lockedBy: lockedAt ? this.options.owner : null,
      insertedBy: this.options.owner,
      failCount: 0,
      ...optional("traceContext", delivery.traceContext),
    };
  }

  /** All or nothing, as the SQL insert: an ordered insert stops at the first failure, and exactly the ones before it are ours to take back. */
  async #insertAll(docs: Doc[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.#notifications.insertMany(docs, { ordered: true });
    } catch (error) {
      const inserted = (error as { insertedCount?: number }).insertedCount ?? 0;
      if (inserted > 0) {
        await this.#notifications.deleteMany({ _id: { $in: docs.slice(0, inserted).map((doc) => doc._id) } }).catch(() => {});
      }
      throw error;
    }
  }
}
