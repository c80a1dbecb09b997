import type { Collection, Filter } from "mongodb";
import type { DeliveryAttempt, Notification } from "../../domain/model.js";
import type { NotificationQuery, NotificationStore } from "../../domain/ports.js";
import {
  type AttemptDoc,
  type ClientDoc,
  checkCursor,
  checkDate,
  checkLimit,
  type IdempotencyKeyDoc,
  isString,
  type NotificationDoc,
  optional,
} from "./documents.js";

// Field by field, so the `scheduled` flag and the job (see jobs.ts) stay inside
// and a stored null reads as absent.
export const toNotification = (d: NotificationDoc): Notification => ({
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
    private readonly clients: Collection<ClientDoc>,
    private readonly idempotencyKeys: Collection<IdempotencyKeyDoc>,
  ) {}

  async get(id: string): Promise<Notification | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.notifications.findOne({ _id: id });
    return doc ? toNotification(doc) : undefined;
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
    if (query.event != null) {
      if (!isString(query.event)) return [];
      filter.event = query.event;
    }
    const createdAt: { $gte?: Date; $lt?: Date; $lte?: Date } = {};
    if (query.since !== undefined) createdAt.$gte = checkDate(query.since, "since");
    if (query.until !== undefined) createdAt.$lt = checkDate(query.until, "until");
    if (query.before !== undefined) {
      const { createdAt: at, id } = checkCursor(query.before);
      // (createdAt, _id) < (cursor) as SQL's row comparison; the $lte bound lets the index seek.
      createdAt.$lte = at;
      filter.$or = [{ createdAt: { $lt: at } }, { _id: { $lt: id } }];
    }
    if (Object.keys(createdAt).length > 0) filter.createdAt = createdAt;
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

  async listAttempts(notificationId: string): Promise<DeliveryAttempt[]> {
    if (!isString(notificationId)) return [];
    const docs = await this.attempts.find({ notificationId }).sort({ seq: 1 }).toArray();
    return docs.map(toAttempt);
  }

  /**
   * As the SQL statement: each client's oldest ended notifications (not
   * pending, and no job in the document) on its (clientId, createdAt)
   * index. Their attempts go first: a purge cut short leaves notifications
   * that the next one finds again, never attempts of no notification.
   * Instances purging at once may pick the same ones; each counts only what
   * it deleted itself.
   */
  async purgeEnded(now: Date, defaultRetentionMs: number, limit: number): Promise<{ notifications: number; attempts: number }> {
    checkLimit(limit);
    const ended = { status: { $ne: "pending" as const }, job: { $exists: false } };
    const ids: string[] = [];
    for (const client of await this.#clients()) {
      if (ids.length >= limit) break;
      const cutoff = new Date(now.getTime() - (client.retentionMs ?? defaultRetentionMs));
      const docs = await this.notifications
        .find({ clientId: client._id, createdAt: { $lt: cutoff }, ...ended })
        .sort({ createdAt: 1, _id: 1 })
        .limit(limit - ids.length)
        .project<{ _id: string }>({ _id: 1 })
        .toArray();
      ids.push(...docs.map((doc) => doc._id));
    }
    if (ids.length === 0) return { notifications: 0, attempts: 0 };
    const attempts = await this.attempts.deleteMany({ notificationId: { $in: ids } });
    const notifications = await this.notifications.deleteMany({ _id: { $in: ids }, ...ended });
    return { notifications: notifications.deletedCount, attempts: attempts.deletedCount };
  }

  /**
   * As the SQL statement: each client's oldest keys past their lifetime, on
   * its (clientId, createdAt) index, deleted with the same condition, so a
   * key stored again meanwhile (its twin deleted by another instance) stays.
   */
  async purgeExpiredKeys(now: Date, defaultRetentionMs: number, lifetimeMs: number, limit: number): Promise<number> {
    checkLimit(limit);
    let deleted = 0;
    let left = limit;
    for (const client of await this.#clients()) {
      if (left <= 0) break;
      const expired = {
        "_id.clientId": client._id,
        createdAt: { $lt: new Date(now.getTime() - Math.min(client.retentionMs ?? defaultRetentionMs, lifetimeMs)) },
      };
      const docs = await this.idempotencyKeys
        .find(expired)
        .sort({ createdAt: 1 })
        .limit(left)
        .project<Pick<IdempotencyKeyDoc, "_id">>({ _id: 1 })
        .toArray();
      if (docs.length === 0) continue;
      left -= docs.length;
      deleted += (await this.idempotencyKeys.deleteMany({ ...expired, _id: { $in: docs.map((doc) => doc._id) } })).deletedCount;
    }
    return deleted;
  }

  async oldestCreatedAt(): Promise<Date | undefined> {
    let oldest: Date | undefined;
    for (const client of await this.#clients()) {
      const [first] = await this.notifications
        .find({ clientId: client._id })
        .sort({ createdAt: 1 })
        .limit(1)
        .project<{ createdAt: Date }>({ createdAt: 1 })
        .toArray();
      if (first && (!oldest || first.createdAt < oldest)) oldest = first.createdAt;
    }
    return oldest;
  }

  #clients(): Promise<Array<Pick<ClientDoc, "_id" | "retentionMs">>> {
    return this.clients.find({}).project<Pick<ClientDoc, "_id" | "retentionMs">>({ retentionMs: 1 }).toArray();
  }
}
