import { type Collection, type Db, MongoServerError } from "mongodb";
import { newId } from "../../domain/ids.js";
import type { Client, DeliveryAttempt, Notification, NotificationStatus, Subscription } from "../../domain/model.js";
import type { ClientStore, NotificationStore, Store, SubscriptionStore } from "../../domain/ports.js";

// Collections match the SQL table names, so both backends read the same in a shell.
const CLIENTS = "wh_clients";
const API_KEYS = "wh_api_keys";
const SUBSCRIPTIONS = "wh_subscriptions";
const NOTIFICATIONS = "wh_notifications";
const ATTEMPTS = "wh_delivery_attempts";

const DUPLICATE_KEY = 11000;

// Each document is its domain record with the id as `_id`, so the two can't drift apart.
interface ClientDoc extends Omit<Client, "id"> {
  _id: string;
}

interface ApiKeyDoc {
  /** The key hash: `_id` gives the uniqueness the SQL primary key gives. */
  _id: string;
  clientId: string;
  createdAt: Date;
  revokedAt?: Date | null;
}

interface SubscriptionDoc extends Omit<Subscription, "id"> {
  _id: string;
}

interface NotificationDoc extends Omit<Notification, "id"> {
  _id: string;
  scheduled: boolean;
}

/** `_id` is left to the driver (an ObjectId); `seq` carries the insertion order. */
interface AttemptDoc extends DeliveryAttempt {
  seq: number;
}

// Documents are written field by field, so the rest holds exactly the domain fields.
const toSubscription = ({ _id, ...rest }: SubscriptionDoc): Subscription => ({ id: _id, ...rest });
const toNotification = ({ _id, scheduled: _scheduled, ...rest }: NotificationDoc): Notification => ({ id: _id, ...rest });

// `!= null` also drops a stored null, so optional fields come back absent as in the SQL adapter.
const toAttempt = (d: AttemptDoc): DeliveryAttempt => ({
  notificationId: d.notificationId,
  attempt: d.attempt,
  startedAt: d.startedAt,
  durationMs: d.durationMs,
  ...(d.statusCode != null ? { statusCode: d.statusCode } : {}),
  ...(d.responseBody != null ? { responseBody: d.responseBody } : {}),
  ...(d.error != null ? { error: d.error } : {}),
  succeeded: d.succeeded,
});

// Mongo operators hide inside objects ({ $ne: null }) and RegExps match by pattern,
// so only a real string may become a filter value.
const isString = (value: unknown): value is string => typeof value === "string";

// Microseconds since the epoch, bumped within a process: attempts for one notification
// are sequential, so this orders them like the SQL bigserial does (exact below 2^53).
let lastSeq = 0;
function nextSeq(): number {
  lastSeq = Math.max(lastSeq + 1, Date.now() * 1000);
  return lastSeq;
}

class MongoClientStore implements ClientStore {
  constructor(
    private readonly clients: Collection<ClientDoc>,
    private readonly keys: Collection<ApiKeyDoc>,
  ) {}

  async ensureWithKey(name: string, keyHash: string): Promise<Client> {
    if (!isString(keyHash)) throw new TypeError("keyHash must be a string");
    const existing = await this.findByKeyHash(keyHash);
    if (existing) return existing;
    const client: Client = { id: newId("cli"), name, createdAt: new Date() };
    await this.clients.insertOne({ _id: client.id, name: client.name, createdAt: client.createdAt });
    try {
      await this.keys.insertOne({ _id: keyHash, clientId: client.id, createdAt: client.createdAt });
      return client;
    } catch (error) {
      // No transaction: undo the client by hand, as the SQL statement's rollback would.
      // Best effort: a leftover client holds no key, so nothing can authenticate as it.
      await this.clients.deleteOne({ _id: client.id }).catch(() => {});
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
    }
    // Another instance bootstrapped the same key first; its client wins.
    const winner = await this.findByKeyHash(keyHash);
    if (!winner) throw new Error("client key vanished while bootstrapping");
    return winner;
  }

  async findByKeyHash(keyHash: string): Promise<Client | undefined> {
    if (!isString(keyHash)) return undefined;
    // One round trip, like the SQL join: this runs on every authenticated request.
    const [doc] = await this.keys
      .aggregate<ClientDoc>([
        { $match: { _id: keyHash, revokedAt: null } },
        { $lookup: { from: CLIENTS, localField: "clientId", foreignField: "_id", as: "client" } },
        { $unwind: "$client" },
        { $replaceWith: "$client" },
      ])
      .toArray();
    return doc && { id: doc._id, name: doc.name, createdAt: doc.createdAt };
  }
}

class MongoSubscriptionStore implements SubscriptionStore {
  constructor(
    private readonly subscriptions: Collection<SubscriptionDoc>,
    private readonly clients: Collection<ClientDoc>,
  ) {}

  async insert(s: Subscription): Promise<void> {
    // Stands in for the SQL foreign key on client_id.
    const owner = isString(s.clientId) ? await this.clients.findOne({ _id: s.clientId }, { projection: { _id: 1 } }) : null;
    if (!owner) throw new Error(`subscription ${s.id}: client ${String(s.clientId)} does not exist`);
    await this.subscriptions.insertOne({
      _id: s.id,
      clientId: s.clientId,
      event: s.event,
      url: s.url,
      description: s.description,
      enabled: s.enabled,
      publicKeyPem: s.publicKeyPem,
      privateKeyPem: s.privateKeyPem,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
    });
  }

  async get(id: string): Promise<Subscription | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.subscriptions.findOne({ _id: id });
    return doc ? toSubscription(doc) : undefined;
  }

  async findByUrl(clientId: string, url: string): Promise<Subscription[]> {
    if (!isString(clientId) || !isString(url)) return [];
    const docs = await this.subscriptions.find({ clientId, url }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(toSubscription);
  }
}

class MongoNotificationStore implements NotificationStore {
  constructor(
    private readonly notifications: Collection<NotificationDoc>,
    private readonly attempts: Collection<AttemptDoc>,
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
      scheduled: false,
      createdAt: n.createdAt,
      updatedAt: n.updatedAt,
    }));
    await this.notifications.insertMany(docs, { ordered: true });
  }

  async markScheduled(ids: string[]): Promise<void> {
    const strings = ids.filter(isString);
    if (strings.length === 0) return;
    await this.notifications.updateMany({ _id: { $in: strings } }, { $set: { scheduled: true } });
  }

  async listUnscheduled(createdBefore: Date, limit: number): Promise<string[]> {
    // Mongo reads limit 0 as "no limit" and a negative one as a batch size; SQL does neither.
    if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
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

  async recordAttempt(a: DeliveryAttempt, status: NotificationStatus): Promise<void> {
    if (!isString(a.notificationId)) throw new TypeError("notificationId must be a string");
    // Undefined would be stored as null (the driver's default), so absent fields are left out.
    const { insertedId } = await this.attempts.insertOne({
      seq: nextSeq(),
      notificationId: a.notificationId,
      attempt: a.attempt,
      startedAt: a.startedAt,
      durationMs: a.durationMs,
      ...(a.statusCode != null ? { statusCode: a.statusCode } : {}),
      // Same substitution as the SQL adapter (PostgreSQL text can't hold NUL), so both read back alike.
      ...(a.responseBody != null ? { responseBody: a.responseBody.replaceAll("\u0000", "\uFFFD") } : {}),
      ...(a.error != null ? { error: a.error } : {}),
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

/** Creates the indexes the queries above rely on; safe to run on every start. */
export async function ensureMongoIndexes(db: Db): Promise<void> {
  await Promise.all([
    db
      .collection<SubscriptionDoc>(SUBSCRIPTIONS)
      .createIndexes([{ key: { clientId: 1, url: 1 }, name: "wh_subscriptions_client_url_idx" }]),
    db.collection<NotificationDoc>(NOTIFICATIONS).createIndexes([
      { key: { createdAt: 1 }, name: "wh_notifications_unscheduled_idx", partialFilterExpression: { scheduled: false } },
      { key: { subscriptionId: 1, createdAt: -1 }, name: "wh_notifications_subscription_idx" },
    ]),
    db
      .collection<AttemptDoc>(ATTEMPTS)
      .createIndexes([{ key: { notificationId: 1, seq: 1 }, name: "wh_delivery_attempts_notification_idx" }]),
  ]);
}

/** The storage port on MongoDB. Call `ensureMongoIndexes` first. */
export async function createMongoStore(db: Db): Promise<Store> {
  const clients = db.collection<ClientDoc>(CLIENTS);
  return {
    clients: new MongoClientStore(clients, db.collection<ApiKeyDoc>(API_KEYS)),
    subscriptions: new MongoSubscriptionStore(db.collection<SubscriptionDoc>(SUBSCRIPTIONS), clients),
    notifications: new MongoNotificationStore(db.collection<NotificationDoc>(NOTIFICATIONS), db.collection<AttemptDoc>(ATTEMPTS)),
  };
}
