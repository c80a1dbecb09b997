import type { Collection, Db } from "mongodb";
import { type LockRequest, scanWindow, withinBudgets, withoutBudget } from "../../delivery/fairness/budgets.js";
import type {
  DeliveryRead,
  FinishedRun,
  HeldJob,
  JobCounts,
  JobStore,
  KeyedDeliveries,
  LockedBatch,
  LockedJob,
  NewDelivery,
  RetriedRun,
} from "../../delivery/job-store.js";
import { endpointOf } from "../../domain/endpoint.js";
import type { DeliveryAttempt, NotificationStatus } from "../../domain/model.js";
import type { AcceptedPublish } from "../../domain/ports.js";
import { countAccepted, countAttempt, statsCollection } from "./delivery-stats.js";
import { type AttemptDoc, collections, isString, type NotificationDoc, optional, toAttemptDoc, toNotificationDoc } from "./documents.js";
import { claimKeys } from "./idempotency-keys.js";
import { toNotification } from "./notifications.js";
import { toSubscription } from "./subscriptions.js";

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
  /** Kept from older versions; no longer written. */
  failCount?: number;
  traceContext?: string;
  /** The throttle slot it waits for (fairness/throttle.ts). */
  throttleSlotAt?: Date;
}

type Doc = NotificationDoc & { job?: JobDoc };

/** Scheduled so as not to run until the idempotency key is settled; a crash meanwhile only delays them this long. */
const HELD_FOR_KEY_MS = 60_000;

/**
 * Delivery jobs in MongoDB: each pending notification's document carries
 * its job (`job`), removed once the notification is delivered or has failed
 * for good. The lock's budgets are fairness/budgets.ts's `withinBudgets`,
 * applied to the due documents read.
 */
export class MongoJobStore implements JobStore {
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
    // Due jobs in (nextRunAt, id) order, the lock rule's (fairness/budgets.ts).
    await this.#notifications.createIndexes([
      {
        key: { "job.lockedAt": 1, "job.nextRunAt": 1, _id: 1 },
        name: "wh_notifications_job_due_idx",
        partialFilterExpression: { job: { $exists: true } },
      },
    ]);
    await this.#notifications.dropIndex("wh_notifications_job_idx").catch((error: unknown) => {
      // 27: IndexNotFound (an index an older version never made).
      if ((error as { code?: unknown }).code !== 27) throw error;
    });
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
      // One whose subscription is gone gets a job too: its attempt fails it as deleted.
      const subscription = await subscriptions.findOne({ _id: doc.subscriptionId });
      const job = this.#newJob(
        { notification: toNotification(doc), endpoint: endpointOf(doc.clientId, subscription?.url ?? "") },
        nextRunAt,
      );
      await this.#notifications.updateOne(
        { _id: doc._id, job: { $exists: false } },
        { $set: { job: { ...job, failCount }, scheduled: true } },
      );
    }
  }

  async insert(deliveries: readonly NewDelivery[]): Promise<void> {
    const now = new Date();
    await this.#insertAll(
      deliveries.map((delivery) => ({ ...toNotificationDoc(delivery.notification), job: this.#newJob(delivery, now) })),
    );
    await countAccepted(statsCollection(this.db), deliveries);
  }

  async insertBatch(items: readonly KeyedDeliveries[]): Promise<AcceptedPublish[]> {
    const idsOf = (item: KeyedDeliveries) => item.deliveries.map((delivery) => delivery.notification.id);
    const keyed = items.flatMap((item, index) => (item.key === undefined ? [] : [{ index, clientId: item.clientId, key: item.key }]));
    // No transaction: the notifications go in first, held back until their keys are settled, so that a
    // duplicate's are taken back before anything runs them. A crash in between delays them, loses none.
    const heldUntil = new Date(Date.now() + (keyed.length > 0 ? HELD_FOR_KEY_MS : 0));
    await this.#insertAll(
      items.flatMap((item) =>
        item.deliveries.map((delivery) => ({ ...toNotificationDoc(delivery.notification), job: this.#newJob(delivery, heldUntil) })),
      ),
    );
    if (keyed.length === 0) {
      await countAccepted(
        statsCollection(this.db),
        items.flatMap((item) => item.deliveries),
      );
      return items.map((item) => ({ ids: idsOf(item), duplicate: false }));
    }
    const taken = await claimKeys(
      this.db,
      keyed.map(({ index, clientId, key }) => ({ clientId, key, ids: idsOf(items[index] as KeyedDeliveries) })),
    );
    const earlier = new Map([...taken].map(([claim, ids]) => [(keyed[claim] as { index: number }).index, ids]));
    const takenBack = items.flatMap((item, index) => (earlier.has(index) ? idsOf(item) : []));
    if (takenBack.length > 0) await this.#notifications.deleteMany({ _id: { $in: takenBack } });
    const released = items.flatMap((item, index) => (earlier.has(index) ? [] : idsOf(item)));
    if (released.length > 0)
      await this.#notifications.updateMany({ _id: { $in: released }, "job.lockedAt": null }, { $set: { "job.nextRunAt": new Date() } });
    await countAccepted(
      statsCollection(this.db),
      items.flatMap((item, index) => (earlier.has(index) ? [] : item.deliveries)),
    );
    return items.map((item, index) => {
      const ids = earlier.get(index);
      return ids ? { ids, duplicate: true } : { ids: idsOf(item), duplicate: false };
    });
  }

  async lockDue(request: LockRequest): Promise<LockedBatch> {
    const now = new Date();
    const deadline = new Date(now.getTime() - this.options.lockLifetimeMs);
    const scan = scanWindow(request);
    const leftOut = {
      "job.endpoint": { $nin: withoutBudget(request.endpointBudgets) },
      "job.clientId": { $nin: withoutBudget(request.clientBudgets) },
    };
    const project = { _id: 1, "job.endpoint": 1, "job.clientId": 1, "job.nextRunAt": 1 } as const;
    type Candidate = { _id: string; job: { endpoint: string; clientId: string; nextRunAt: Date | null } };
    // `job: {$exists: true}` lets the partial index serve these reads.
    const due = await this.#notifications
      .find({ job: { $exists: true }, "job.lockedAt": null, "job.nextRunAt": { $lte: now }, ...leftOut })
      .sort({ "job.nextRunAt": 1, _id: 1 })
      .limit(scan)
      .project<Candidate>(project)
      .toArray();
    const expired = await this.#notifications
      .find({ job: { $exists: true }, "job.lockedAt": { $lte: deadline }, ...leftOut })
      .sort({ "job.lockedAt": 1 })
      .limit(request.limit)
      .project<Candidate>(project)
      .toArray();
    // Due and expired together, oldest due first (ties by id, as the SQL lock): a dead instance's jobs take their turn.
    const candidates = [...due, ...expired]
      .map((doc) => ({ id: doc._id, endpoint: doc.job.endpoint, clientId: doc.job.clientId, dueAt: doc.job.nextRunAt?.getTime() ?? 0 }))
      .sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const { chosen, passedOver } = withinBudgets(candidates, request);
    const drained = due.length < scan && chosen.length < request.limit;
    if (chosen.length === 0) return { jobs: [], drained, passedOver };
    const token = `${this.options.owner}#${++this.#lockBatches}`;
    const ids = chosen.map((candidate) => candidate.id);
    await this.#notifications.updateMany(
      { _id: { $in: ids }, $or: [{ "job.lockedAt": null, "job.nextRunAt": { $lte: now } }, { "job.lockedAt": { $lte: deadline } }] },
      [{ $set: { "job.lockedAt": now, "job.lockedBy": token, "job.nextRunAt": { $ifNull: ["$job.nextRunAt", now] } } }],
    );
    const locked = await this.#notifications.find({ _id: { $in: ids }, "job.lockedBy": token }).toArray();
    const reads = await this.#reads(locked);
    const byId = new Map(locked.map((doc) => [doc._id, doc]));
    const jobs = chosen.flatMap((candidate): LockedJob[] => {
      const job = byId.get(candidate.id)?.job;
      if (!job) return [];
      const read = reads.get(candidate.id);
      return [
        {
          id: candidate.id,
          endpoint: job.endpoint,
          clientId: job.clientId,
          lockedAt: now,
          ...optional("traceContext", job.traceContext),
          ...optional("throttleSlotAt", job.throttleSlotAt),
          ...(read ? { read } : {}),
        },
      ];
    });
    return { jobs, drained, passedOver };
  }

  /** What each locked job's attempt reads: its notification (the document itself) and its subscription. */
  async #reads(docs: readonly Doc[]): Promise<Map<string, DeliveryRead>> {
    const subscriptionIds = [...new Set(docs.map((doc) => doc.subscriptionId))];
    const found = await collections(this.db)
      .subscriptions.find({ _id: { $in: subscriptionIds } })
      .toArray();
    const subscriptions = new Map(found.map((doc) => [doc._id, toSubscription(doc)]));
    return new Map(
      docs.map((doc) => {
        const subscription = subscriptions.get(doc.subscriptionId);
        return [doc._id, subscription ? { notification: toNotification(doc), subscription } : { notification: toNotification(doc) }];
      }),
    );
  }

  async unlock(jobs: readonly HeldJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.#notifications.bulkWrite(
      jobs.map((job) => ({
        updateOne: {
          filter: { _id: job.id, "job.lockedAt": job.heldLock },
          // A job handed back left without a schedule would never be due again: it is due now.
          update: [{ $set: { "job.lockedAt": null, "job.lockedBy": null, "job.nextRunAt": { $ifNull: ["$job.nextRunAt", "$$NOW"] } } }],
        },
      })),
      { ordered: false },
    );
  }

  async renew(job: HeldJob, lockedAt: Date): Promise<boolean> {
    const { matchedCount } = await this.#notifications.updateOne(
      { _id: job.id, "job.lockedAt": job.heldLock },
      { $set: { "job.lockedAt": lockedAt } },
    );
    return matchedCount === 1;
  }

  /**
   * The attempt is recorded, then the job removed: two writes. If the
   * removal fails, the job runs again later and finds its notification
   * ended: nothing is sent twice.
   */
  async finish(run: FinishedRun): Promise<boolean> {
    await this.#record(run.attempt, run.status);
    return this.remove(run);
  }

  /**
   * The attempt is recorded, then the retry scheduled: two writes. If the
   * schedule fails, the run fails on our side and is rescheduled (or its
   * lock expires): the retry runs early, never lost.
   */
  async retry(run: RetriedRun): Promise<boolean> {
    await this.#record(run.attempt, "pending");
    // A retry takes a throttle slot of its own when it is due.
    const { matchedCount } = await this.#notifications.updateOne(
      { _id: run.id, "job.lockedAt": run.heldLock },
      { $set: { "job.nextRunAt": run.nextRunAt, "job.lockedAt": null, "job.lockedBy": null }, $unset: { "job.throttleSlotAt": "" } },
    );
    return matchedCount === 1;
  }

  async takeSlot(subscriptionId: string, now: Date, intervalMs: number): Promise<Date> {
    const taken = await collections(this.db).throttleSlots.findOneAndUpdate(
      { _id: subscriptionId },
      [{ $set: { nextAt: { $add: [{ $max: [{ $ifNull: ["$nextAt", now] }, now] }, intervalMs] } } }],
      { upsert: true, returnDocument: "after" },
    );
    if (!taken?.nextAt) throw new Error(`no throttle slot for subscription ${subscriptionId}`);
    return new Date(taken.nextAt.getTime() - intervalMs);
  }

  async claimSend(subscriptionId: string, now: Date, intervalMs: number): Promise<Date | undefined> {
    const slots = collections(this.db).throttleSlots;
    const claimed = await slots.findOneAndUpdate(
      { _id: subscriptionId, $or: [{ sendAt: { $exists: false } }, { sendAt: { $lte: now } }] },
      { $set: { sendAt: new Date(now.getTime() + intervalMs) } },
    );
    if (claimed) return undefined;
    const current = await slots.findOne({ _id: subscriptionId });
    if (current?.sendAt) return current.sendAt;
    // No slot document yet (none was ever taken): the first request opens it, unless another just did.
    const opened = await slots.updateOne(
      { _id: subscriptionId },
      { $setOnInsert: { sendAt: new Date(now.getTime() + intervalMs) } },
      { upsert: true },
    );
    return opened.upsertedCount === 1 ? undefined : now;
  }

  async waitForSlot(job: HeldJob, slot: Date): Promise<boolean> {
    const { matchedCount } = await this.#notifications.updateOne(
      { _id: job.id, "job.lockedAt": job.heldLock },
      { $set: { "job.nextRunAt": slot, "job.throttleSlotAt": slot, "job.lockedAt": null, "job.lockedBy": null } },
    );
    return matchedCount === 1;
  }

  async reschedule(job: HeldJob, nextRunAt: Date): Promise<boolean> {
    const { matchedCount } = await this.#notifications.updateOne(
      { _id: job.id, "job.lockedAt": job.heldLock },
      { $set: { "job.nextRunAt": nextRunAt, "job.lockedAt": null, "job.lockedBy": null } },
    );
    return matchedCount === 1;
  }

  async remove(job: HeldJob): Promise<boolean> {
    const { matchedCount } = await this.#notifications.updateOne({ _id: job.id, "job.lockedAt": job.heldLock }, { $unset: { job: "" } });
    return matchedCount === 1;
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

  #newJob(delivery: NewDelivery, nextRunAt: Date): JobDoc {
    return {
      endpoint: delivery.endpoint,
      clientId: delivery.notification.clientId,
      nextRunAt,
      lockedAt: delivery.lockedAt ?? null,
      lockedBy: delivery.lockedAt ? this.options.owner : null,
      insertedBy: this.options.owner,
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

  /** Appends the attempt and moves its notification to `status`. */
  async #record(a: DeliveryAttempt, status: NotificationStatus): Promise<void> {
    if (!isString(a.notificationId)) throw new TypeError("notificationId must be a string");
    const { insertedId } = await this.#attempts.insertOne(toAttemptDoc(a));
    // $max keeps a replayed older attempt from lowering the count (SQL GREATEST).
    // A final status stays (as in SQL): only a pending notification moves.
    const before = await this.#notifications.findOneAndUpdate(
      { _id: a.notificationId },
      [
        {
          $set: {
            status: { $cond: [{ $eq: ["$status", "pending"] }, { $literal: status }, "$status"] },
            updatedAt: { $literal: new Date() },
            attemptCount: { $max: ["$attemptCount", a.attempt + 1] },
          },
        },
      ],
      { projection: { job: 1 } },
    );
    if (!before) {
      // The SQL foreign key rejects an attempt for an unknown notification; do the same.
      await this.#attempts.deleteOne({ _id: insertedId });
      throw new Error(`notification ${a.notificationId} does not exist`);
    }
    // As in SQL, an attempt whose job is gone (another instance finished it) is recorded but not counted.
    if (before.job) await countAttempt(statsCollection(this.db), a, status, before.job);
  }
}
