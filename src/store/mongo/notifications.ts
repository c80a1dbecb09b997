import { type Collection, type Filter, MongoBulkWriteError } from "mongodb";
import type { DeliveryAttempt, Notification, NotificationStatus, Subscription } from "../../domain/model.js";
import type { NotificationQuery, NotificationStore, SubscriptionStore } from "../../domain/ports.js";
import {
  type AttemptDoc,
  checkCursor,
  checkLimit,
  type IdempotencyKeyDoc,
  isDuplicateKey,
  isString,
  type NotificationDoc,
  optional,
} from "./documents.js";

// Field by field, so the `scheduled` flag stays inside and a stored null reads as absent.
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

// Microseconds since the epoch, bumped within a process: attempts for one notification
// are sequential, so this orders them like the SQL bigserial does (exact below 2^53).
let lastSeq = 0;
function nextSeq(): number {
  lastSeq = Math.max(lastSeq + 1, Date.now() * 1000);
  return lastSeq;
}

export class MongoNotificationStore implements NotificationStore {
  constructor(
    private readonly notifications: Collection<NotificationDoc>,
    private readonly idempotencyKeys: Collection<IdempotencyKeyDoc>,
    private readonly attempts: Collection<AttemptDoc>,
    private readonly subscriptions: SubscriptionStore,
  ) {}

  async insert(notifications: Notification[]): Promise<void> {
    if (notifications.length === 0) return;
    // Fresh documents: the driver writes `_id` into what it inserts.
    const docs: NotificationDoc[] = notifications.map((n) => ({
      _id: n.id,
      subscriptionId: n.subscriptionId,
      clientId: n.clientId,
      event: n.event,
      body: n.body,
      status: n.status,
      attemptCount: n.attemptCount,
      ...optional("redeliveryOf", n.redeliveryOf),
      scheduled: false,
      createdAt: n.createdAt,
      updatedAt: n.updatedAt,
    }));
    try {
      await this.notifications.insertMany(docs, { ordered: true });
    } catch (error) {
      // The SQL INSERT is all or nothing. An ordered insert stops at the first failure, so exactly the
      // first `insertedCount` are ours to take back (a clashing id after them may be someone else's).
      if (error instanceof MongoBulkWriteError && error.insertedCount > 0) {
        const ours = docs.slice(0, error.insertedCount).map((doc) => doc._id);
        await this.notifications.deleteMany({ _id: { $in: ours } }).catch(() => {});
      }
      throw error;
    }
  }

  async insertIdempotent(clientId: string, key: string, notifications: Notification[]): Promise<{ ids: string[]; duplicate: boolean }> {
    if (!isString(clientId) || !isString(key)) throw new TypeError("clientId and key must be strings");
    const ids = notifications.map((n) => n.id);
    // No transaction, so the notifications go in before the key that names them. They are unscheduled
    // and new, so nothing delivers them while we wait for the key. A crash in between leaves at worst
    // notifications no key refers to, which the unscheduled sweep still delivers (as a publish without
    // a key would); the other order could leave a key pointing at nothing, and every retry of the
    // request would then be answered "duplicate" with ids that were never delivered.
    await this.insert(notifications);
    try {
      await this.idempotencyKeys.insertOne({ _id: { clientId, key }, notificationIds: ids, createdAt: new Date() });
      return { ids, duplicate: false };
    } catch (error) {
      // Any other failure leaves the notifications: the key may have been written before the reply was
      // lost, and removing what it names is the one outcome worse than a duplicate delivery.
      if (!isDuplicateKey(error)) throw error;
    }
    // The key was used before: take ours back (the SQL transaction rolls back) and answer with its ids.
    if (ids.length > 0) await this.notifications.deleteMany({ _id: { $in: ids } });
    const stored = await this.idempotencyKeys.findOne({ _id: { clientId, key } });
    return { ids: stored?.notificationIds ?? [], duplicate: true };
  }

  async markScheduled(ids: string[]): Promise<void> {
    const strings = ids.filter(isString);
    if (strings.length === 0) return;
    await this.notifications.updateMany({ _id: { $in: strings } }, { $set: { scheduled: true } });
  }

  async listUnscheduled(createdBefore: Date, limit: number): Promise<string[]> {
    checkLimit(limit);
    if (limit === 0) return [];
    // `scheduled: false` in the filter lets the planner use the partial index.
    const docs = await this.notifications
      .find({ scheduled: false, createdAt: { $lt: createdBefore } })
      .sort({ createdAt: 1 })
      .limit(limit)
      .project<{ _id: string }>({ _id: 1 })
      .toArray();
    return docs.map((doc) => doc._id);
  }

  async get(id: string): Promise<Notification | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.notifications.findOne({ _id: id });
    return doc ? toNotification(doc) : undefined;
  }

  async getForDelivery(id: string): Promise<{ notification: Notification; subscription?: Subscription } | undefined> {
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

  async recordAttempt(a: DeliveryAttempt, status: NotificationStatus): Promise<void> {
    if (!isString(a.notificationId)) throw new TypeError("notificationId must be a string");
    // Undefined would be stored as null (the driver's default), so absent fields are left out.
    const { insertedId } = await this.attempts.insertOne({
      seq: nextSeq(),
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
    const { matchedCount } = await this.notifications.updateOne(
      { _id: a.notificationId },
      { $set: { status, updatedAt: new Date() }, $max: { attemptCount: a.attempt + 1 } },
    );
    if (matchedCount === 0) {
      // The SQL foreign key rejects an attempt for an unknown notification; do the same.
      await this.attempts.deleteOne({ _id: insertedId });
      throw new Error(`notification ${a.notificationId} does not exist`);
    }
  }

  async listAttempts(notificationId: string): Promise<DeliveryAttempt[]> {
    if (!isString(notificationId)) return [];
    const docs = await this.attempts.find({ notificationId }).sort({ seq: 1 }).toArray();
    return docs.map(toAttempt);
  }
}
