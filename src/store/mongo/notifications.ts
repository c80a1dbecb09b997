import type { Collection, Filter } from "mongodb";
import type { DeliveryAttempt, Notification, NotificationStatus } from "../../domain/model.js";
import type { DeliveryRead, NotificationQuery, NotificationStore, SubscriptionStore } from "../../domain/ports.js";
import { type AttemptDoc, checkCursor, checkLimit, isString, type NotificationDoc, nextAttemptSeq, optional } from "./documents.js";

// Field by field, so the `scheduled` flag and the job (see delivery/agenda/mongo-job-store.ts) stay inside
// and a stored null reads as absent.
const toNotification = (d: NotificationDoc): Notification => ({
  id: d._id,
  subscriptionId: d.subscriptionId,
  clientId: d.clientId,
  event: d.event,
  body: d.body,
  status: d.status,
  attemptCount: d.attemptCount,
  ...optional("redeliveryOf", d.redeliveryOf),
  createdAt: d.createdAt,
  updatedAt: d.updatedAt,
});

// `!= null` also drops a stored null, so optional fields come back absent as in the SQL adapter.
const toAttempt = (d: AttemptDoc): DeliveryAttempt => ({
  notificationId: d.notificationId,
  attempt: d.attempt,
  startedAt: d.startedAt,
  durationMs: d.durationMs,
  ...optional("statusCode", d.statusCode),
  ...optional("responseBody", d.responseBody),
  ...optional("error", d.error),
  succeeded: d.succeeded,
});

export class MongoNotificationStore implements NotificationStore {
  constructor(
    private readonly notifications: Collection<NotificationDoc>,
    private readonly attempts: Collection<AttemptDoc>,
    private readonly subscriptions: SubscriptionStore,
  ) {}

  async get(id: string): Promise<Notification | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.notifications.findOne({ _id: id });
    return doc ? toNotification(doc) : undefined;
  }

  async getForDelivery(id: string): Promise<DeliveryRead | undefined> {
    const notification = await this.get(id);
    if (!notification) return undefined;
    const subscription = await this.subscriptions.get(notification.subscriptionId);
    return subscription ? { notification, subscription } : { notification };
  }

  async list(query: NotificationQuery): Promise<Notification[]> {
    checkLimit(query.limit);
    if (query.limit === 0 || !isString(query.subscriptionId)) return [];
    const filter: Filter<NotificationDoc> = { subscriptionId: query.subscriptionId };
    if (query.status != null) {
      // SQL compares a non-string with the text column and finds nothing; so do we.
      if (!isString(query.status)) return [];
      filter.status = query.status;
    }
    if (query.before !== undefined) {
      const { createdAt, id } = checkCursor(query.before);
      // (createdAt, _id) < (cursor) as SQL's row comparison; the $lte bound lets the index seek.
      filter.createdAt = { $lte: createdAt };
      filter.$or = [{ createdAt: { $lt: createdAt } }, { _id: { $lt: id } }];
    }
    const docs = await this.notifications.find(filter).sort({ createdAt: -1, _id: -1 }).limit(query.limit).toArray();
    return docs.map(toNotification);
  }

  async listFailedSince(subscriptionId: string, since: Date, limit: number): Promise<Notification[]> {
    checkLimit(limit);
    if (limit === 0 || !isString(subscriptionId)) return [];
    const docs = await this.notifications
      .find({ subscriptionId, status: "failed", createdAt: { $gte: since } })
      .sort({ createdAt: 1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map(toNotification);
  }

  recordAttempt(attempt: DeliveryAttempt, status: NotificationStatus): Promise<void> {
    return recordAttempt(this.notifications, this.attempts, attempt, status);
  }

  async listAttempts(notificationId: string): Promise<DeliveryAttempt[]> {
    if (!isString(notificationId)) return [];
    const docs = await this.attempts.find({ notificationId }).sort({ seq: 1 }).toArray();
    return docs.map(toAttempt);
  }
}

/**
 * Appends the attempt and moves its notification to `status` (the delivery
 * engine's job store records a run's last attempt through it too).
 */
export async function recordAttempt(
  notifications: Collection<NotificationDoc>,
  attempts: Collection<AttemptDoc>,
  a: DeliveryAttempt,
  status: NotificationStatus,
): Promise<void> {
  if (!isString(a.notificationId)) throw new TypeError("notificationId must be a string");
  // Undefined would be stored as null (the driver's default), so absent fields are left out.
  const { insertedId } = await attempts.insertOne({
    seq: nextAttemptSeq(),
    notificationId: a.notificationId,
    attempt: a.attempt,
    startedAt: a.startedAt,
    durationMs: a.durationMs,
    ...optional("statusCode", a.statusCode),
    // Same substitution as the SQL adapter (PostgreSQL text can't hold NUL), so both read back alike.
    ...optional("responseBody", a.responseBody?.replaceAll("\u0000", "\uFFFD")),
    ...optional("error", a.error),
    succeeded: a.succeeded,
  });
  // $max keeps a replayed older attempt from lowering the count (SQL GREATEST).
  // A final status stays (as in SQL): only a pending notification moves.
  const { matchedCount } = await notifications.updateOne({ _id: a.notificationId }, [
    {
      $set: {
        status: { $cond: [{ $eq: ["$status", "pending"] }, { $literal: status }, "$status"] },
        updatedAt: { $literal: new Date() },
        attemptCount: { $max: ["$attemptCount", a.attempt + 1] },
      },
    },
  ]);
  if (matchedCount === 0) {
    // The SQL foreign key rejects an attempt for an unknown notification; do the same.
    await attempts.deleteOne({ _id: insertedId });
    throw new Error(`notification ${a.notificationId} does not exist`);
  }
}
