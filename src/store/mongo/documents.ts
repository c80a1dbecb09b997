import { type Db, MongoServerError } from "mongodb";
import type { Client, DeliveryAttempt, Notification, Subscription } from "../../domain/model.js";
import type { Cursor } from "../../domain/ports.js";

// Collections match the SQL table names, so both backends read the same in a shell.
export const CLIENTS = "wh_clients";
export const API_KEYS = "wh_api_keys";
export const EVENT_TYPES = "wh_event_types";
export const SUBSCRIPTIONS = "wh_subscriptions";
export const NOTIFICATIONS = "wh_notifications";
export const IDEMPOTENCY_KEYS = "wh_idempotency_keys";
export const ATTEMPTS = "wh_delivery_attempts";
/** (Named before the prefix was settled; the SQL table is wh_throttle_slots.) */
export const THROTTLE_SLOTS = "throttleSlots";

// Each document is its domain record with the id as `_id`, so the two can't drift apart.
export interface ClientDoc extends Omit<Client, "id"> {
  _id: string;
  /** Set once it is deleted: its data is being purged, and then it goes too. */
  deletedAt?: Date | null;
}

export interface ApiKeyDoc {
  /** The key id; `keyHash` carries a unique index, as the SQL column does. */
  _id: string;
  keyHash: string;
  clientId: string;
  /** Missing on keys from before names: "". */
  name?: string;
  createdAt: Date;
  lastUsedAt?: Date;
  revokedAt?: Date | null;
}

/**
 * `_id` is the name. Payload and schema are JSON text, as in the SQL `json`
 * columns: schemas hold keys like `$schema` and `$ref` that MongoDB refuses or
 * could read as operators, and text keeps the key order exactly.
 */
export interface EventTypeDoc {
  _id: string;
  description: string;
  samplePayload: string;
  jsonSchema?: string;
  createdAt: Date;
  updatedAt: Date;
}

/** `signatureScheme` is missing from documents written before schemes existed: those are RSA_SHA256. */
export interface SubscriptionDoc extends Omit<Subscription, "id" | "signatureScheme" | "filter"> {
  _id: string;
  signatureScheme?: Subscription["signatureScheme"];
  /** The rotation deadline its client was told of (SignatureKey.RotationEnding). */
  rotationNoticedFor?: Date;
  /** The payload filter as JSON text: its `$` operators would read as field names MongoDB refuses. */
  filterJson?: string;
}

export interface NotificationDoc extends Omit<Notification, "id"> {
  _id: string;
  scheduled: boolean;
}

/**
 * A new notification as its document. The delivery engine inserts it (with
 * its job, see jobs.ts); `scheduled` is always
 * true now (an older version used false for one not yet queued).
 */
export function toNotificationDoc(notification: Notification): NotificationDoc {
  return {
    _id: notification.id,
    subscriptionId: notification.subscriptionId,
    clientId: notification.clientId,
    event: notification.event,
    body: notification.body,
    status: notification.status,
    attemptCount: notification.attemptCount,
    ...optional("redeliveryOf", notification.redeliveryOf),
    scheduled: true,
    createdAt: notification.createdAt,
    updatedAt: notification.updatedAt,
  };
}

/** The compound `_id` is the SQL primary key (client_id, key): unique without any index to create. */
export interface IdempotencyKeyDoc {
  _id: { clientId: string; key: string };
  notificationIds: string[];
  createdAt: Date;
}

// Microseconds since the epoch, bumped within a process: attempts for one notification
// are sequential, so this orders them like the SQL bigserial does (exact below 2^53).
let lastSeq = 0;
export function nextAttemptSeq(): number {
  lastSeq = Math.max(lastSeq + 1, Date.now() * 1000);
  return lastSeq;
}

/** `_id` is left to the driver (an ObjectId); `seq` carries the insertion order. */
export interface AttemptDoc extends DeliveryAttempt {
  seq: number;
}

/** An attempt as its document; undefined would be stored as null (the driver's default), so absent fields are left out. */
export function toAttemptDoc(a: DeliveryAttempt): AttemptDoc {
  return {
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
  };
}

/** A throttled subscription's next free send slot, shared by every instance (`_id`: the subscription's id). */
export interface ThrottleSlotDoc {
  _id: string;
  /** The next slot to hand a waiting job. */
  nextAt?: Date;
  /** The earliest the next request may go out. */
  sendAt?: Date;
}

export function collections(db: Db) {
  return {
    clients: db.collection<ClientDoc>(CLIENTS),
    apiKeys: db.collection<ApiKeyDoc>(API_KEYS),
    eventTypes: db.collection<EventTypeDoc>(EVENT_TYPES),
    subscriptions: db.collection<SubscriptionDoc>(SUBSCRIPTIONS),
    notifications: db.collection<NotificationDoc>(NOTIFICATIONS),
    idempotencyKeys: db.collection<IdempotencyKeyDoc>(IDEMPOTENCY_KEYS),
    attempts: db.collection<AttemptDoc>(ATTEMPTS),
    throttleSlots: db.collection<ThrottleSlotDoc>(THROTTLE_SLOTS),
  };
}

export type Collections = ReturnType<typeof collections>;

export const DUPLICATE_KEY = 11000;

/** A unique index (or `_id`) refused the write; bulk write errors carry the first write error's code. */
export const isDuplicateKey = (error: unknown): boolean => error instanceof MongoServerError && error.code === DUPLICATE_KEY;

// Mongo operators hide inside objects ({ $ne: null }) and RegExps match by pattern,
// so only a real string may become a filter value.
export const isString = (value: unknown): value is string => typeof value === "string";

/** Optional fields are absent, never null or undefined, in domain records. */
export function optional<K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } {
  return (value == null ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * Mongo reads limit 0 as "no limit" and a negative one as a batch size; SQL LIMIT does neither.
 * Callers return [] for 0 themselves.
 */
export function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
}

/** A cursor's parts become filter values, so they must be a real Date and string. */
/** `date` if it is a valid Date; a TypeError naming `what` otherwise. */
export function checkDate(date: Date, what: string): Date {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) throw new TypeError(`${what} must be a valid Date`);
  return date;
}

export function checkCursor(cursor: Cursor): Cursor {
  if (!(cursor.createdAt instanceof Date) || Number.isNaN(cursor.createdAt.getTime()) || !isString(cursor.id)) {
    throw new TypeError("cursor must hold a valid Date and a string id");
  }
  return cursor;
}
