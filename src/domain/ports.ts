import type { DeliveryStatsStore } from "./delivery-stats.js";
import type {
  ApiKeyRecord,
  Client,
  ClientLimitChanges,
  DeliveryAttempt,
  EventType,
  Notification,
  NotificationStatus,
  Subscription,
} from "./model.js";

/**
 * The storage port. Each adapter (PostgreSQL/PGlite, MongoDB) implements it
 * and passes the same contract suite (`test/store/store-contract.ts`).
 */
export interface Store {
  readonly clients: ClientStore;
  readonly eventTypes: EventTypeStore;
  readonly subscriptions: SubscriptionStore;
  readonly notifications: NotificationStore;
  /** Delivery statistics, written by the job store as it records (delivery-stats.ts). */
  readonly stats: DeliveryStatsStore;
}

/** A position in a list ordered by (createdAt, id). */
export interface Cursor {
  createdAt: Date;
  id: string;
}

/** A client as a key identifies it: the client and which of its keys. */
export interface KeyHolder {
  client: Client;
  keyId: string;
}

/** A client an operator has barred: disabled (with why), or deleted and not yet purged. */
export interface BarredClient {
  id: string;
  /** Absent: deleted. */
  disabledReason?: string;
}

/** What one batch of a deleted client's purge removed. */
export interface DeletedClientPurge {
  notifications: number;
  attempts: number;
  /** Its subscriptions, idempotency keys and finally the client itself. */
  others: number;
}

export interface ClientStore {
  /** Creates the client if no client holds this key hash (the key named `name` too); returns the holder. */
  ensureWithKey(name: string, keyHash: string): Promise<Client>;
  /** The (not deleted) client holding this unrevoked key, and the key's id. */
  findByKeyHash(keyHash: string): Promise<KeyHolder | undefined>;
  create(client: Client, key: ApiKeyRecord): Promise<void>;
  /** The client, unless there is none or it is deleted. */
  get(id: string): Promise<Client | undefined>;
  /** Writes the client's own limits as `changes` says; the client as it now is, undefined when there is none. */
  setLimits(id: string, changes: ClientLimitChanges): Promise<Client | undefined>;
  /** The clients not deleted, oldest first. */
  list(): Promise<Client[]>;
  addKey(key: ApiKeyRecord): Promise<void>;
  /** False when the client has no such key. Revoking twice is fine. */
  revokeKey(clientId: string, keyId: string, at: Date): Promise<boolean>;
  /** The client's keys, revoked ones too, oldest first. */
  listKeys(clientId: string): Promise<ApiKeyRecord[]>;
  /**
   * Records that the key was used at `at`, unless the record says it was
   * used less than `withinMs` before (then nothing is written).
   */
  markKeyUsed(keyId: string, at: Date, withinMs: number): Promise<void>;
  /** Disables the client (null: enables it); the client as it now is, undefined when there is none. */
  setDisabled(id: string, disabled: { at: Date; reason: string } | null): Promise<Client | undefined>;
  /**
   * Marks the client deleted and deletes its keys at once; false when there
   * is none. The rest of its data goes with `purgeDeleted`.
   */
  markDeleted(id: string, at: Date): Promise<boolean>;
  /**
   * Deletes up to `limit` rows of each kind of one deleted client's data:
   * its notifications (with their attempts and jobs, except a job locked
   * right now, which a later batch takes), then its subscriptions and
   * idempotency keys, and the client itself once nothing is left.
   */
  purgeDeleted(limit: number): Promise<DeletedClientPurge>;
  /** The clients disabled or deleted (not yet purged). */
  listBarred(): Promise<BarredClient[]>;
  /** Of these key ids, those still valid: unrevoked, of a client not deleted. */
  validKeys(keyIds: readonly string[]): Promise<string[]>;
}

export interface EventTypeStore {
  /** False (and nothing written) when the name exists. */
  insert(type: EventType): Promise<boolean>;
  /** Replaces the stored type of that name; false when there is none. */
  update(type: EventType): Promise<boolean>;
  get(name: string): Promise<EventType | undefined>;
  /** All types, by name. */
  list(): Promise<EventType[]>;
}

/** What `insertWithinQuota` did: inserted, or refused for a subscription to the same event and URL, or for the quota. */
export type QuotaInsert = { inserted: true } | QuotaRefusal;
/** Why a subscription is refused: another to the same event and URL, or the client's quota used up. */
export type QuotaRefusal = { inserted: false; duplicateOf: string } | { inserted: false; quota: number };
/** What `insertWithinQuota` compares: the subscription's client, event, URL and scheme. */
export type QuotaKey = Pick<Subscription, "id" | "clientId" | "event" | "url" | "signatureScheme">;

export interface SubscriptionStore {
  /** Inserts it as it is: no quota, no duplicate check (`insertWithinQuota` is how subscriptions are created). */
  insert(subscription: Subscription): Promise<void>;
  /**
   * Inserts it unless its client holds a subscription to the same event and
   * URL with the same signature scheme already (subscribing again with
   * another scheme is how a URL switches schemes), or as many as its quota (the client's own, else
   * `defaultQuota`). Two inserts at once never both pass a check that one
   * alone would fail.
   */
  insertWithinQuota(subscription: Subscription, defaultQuota: number): Promise<QuotaInsert>;
  /**
   * Why `insertWithinQuota` would refuse a subscription like this now
   * (undefined: it would insert it), so that a refused create costs no key
   * generation. Only a hint: the insert decides.
   */
  refusal(subscription: QuotaKey, defaultQuota: number): Promise<QuotaRefusal | undefined>;
  get(id: string): Promise<Subscription | undefined>;
  /** The client's subscriptions to this exact URL, oldest first. */
  findByUrl(clientId: string, url: string): Promise<Subscription[]>;
  /** The client's subscriptions, oldest first, after `after`. */
  listByClient(clientId: string, limit: number, after?: Cursor): Promise<Subscription[]>;
  /** The client's enabled subscriptions to this event (publishing fans out to these). */
  listEnabledForEvent(clientId: string, event: string): Promise<Subscription[]>;
  /**
   * Writes the owner-controlled fields (not the failure streak, nor the
   * signature scheme, fixed at creation), only if the
   * stored `updatedAt` still equals `expectedUpdatedAt`; false when it changed
   * meanwhile or is gone.
   */
  update(subscription: Subscription, expectedUpdatedAt: Date): Promise<boolean>;
  /**
   * Deletes it; false when it was not there. Its notifications are kept
   * (their job ids stay answerable): those still pending end as failed, with
   * a last attempt saying "subscription was deleted".
   */
  delete(id: string): Promise<boolean>;
  /** Moves the lease of each of these that holds one (a temporary relay subscription) to `until`. */
  renewLeases(ids: readonly string[], until: Date): Promise<void>;
  /** Up to `limit` subscriptions whose lease ended before `now`. */
  listLeaseEnded(now: Date, limit: number): Promise<string[]>;
  /** Deletes it as `delete` does, only if its lease still ended before `now` (no renewal came meanwhile). */
  deleteLeaseEnded(id: string, now: Date): Promise<boolean>;
  /**
   * Starts a failure streak unless one runs (then it writes nothing); returns
   * when the streak began, or undefined when the subscription is gone or
   * another write began the streak at the same moment.
   */
  markFailing(id: string, at: Date): Promise<Date | undefined>;
  /** Ends a failure streak. */
  markHealthy(id: string): Promise<void>;
  /**
   * The enabled subscriptions whose key rotation ends after `now` and by
   * `by`, each answered once per rotation deadline: marked as told here, so
   * no other call (or instance) answers it again.
   */
  claimRotationsEnding(by: Date, now: Date): Promise<Subscription[]>;
  /** Marks the streak that began at `since` as told to the client, unless it was; answers whether this call marked it. */
  noticeFailing(id: string, since: Date, at: Date): Promise<boolean>;
  /** Disables it with a reason unless it is disabled already; answers whether this call disabled it. */
  disable(id: string, reason: string, at: Date): Promise<boolean>;
}

export interface NotificationQuery {
  subscriptionId: string;
  status?: NotificationStatus;
  /** Only this event's. */
  event?: string;
  /** Only those created at or after this time. */
  since?: Date;
  /** Only those created before this time. */
  until?: Date;
  limit: number;
  /** Newest first, strictly before this position. */
  before?: Cursor;
}

/**
 * Notifications as stored, for reading. They are written by the delivery
 * engine alone (DeliveryQueue): stored with their first attempt's job in one
 * write, and each attempt recorded with its job's end or retry.
 */
export interface NotificationStore {
  get(id: string): Promise<Notification | undefined>;
  list(query: NotificationQuery): Promise<Notification[]>;
  /** Failed notifications of a subscription created at or after `since`, oldest first. */
  listFailedSince(subscriptionId: string, since: Date, limit: number): Promise<Notification[]>;
  listAttempts(notificationId: string): Promise<DeliveryAttempt[]>;
  /**
   * Deletes up to `limit` notifications that have ended (delivered or
   * failed, and no job left) and were created before `now` less their
   * client's retention (its own, else `defaultRetentionMs`), with their
   * attempts, and says how many of each. Pending ones are never deleted.
   * Instances purging at once share the work: a row is deleted once.
   */
  purgeEnded(now: Date, defaultRetentionMs: number, limit: number): Promise<{ notifications: number; attempts: number }>;
  /**
   * Deletes up to `limit` idempotency keys stored before `now` less their
   * lifetime: `lifetimeMs` or their client's retention (its own, else
   * `defaultRetentionMs`), whichever is shorter; how many. A publish
   * repeating a deleted key is a new publish.
   */
  purgeExpiredKeys(now: Date, defaultRetentionMs: number, lifetimeMs: number, limit: number): Promise<number>;
  /** When the oldest notification kept (pending ones too) was created; undefined when there is none. */
  oldestCreatedAt(): Promise<Date | undefined>;
}

/** One publish's notifications, and its idempotency key if it has one. */
export interface PublishedBatchItem {
  clientId: string;
  key?: string;
  notifications: readonly Notification[];
}

/** A publish's job ids, or (`duplicate`) those of the first publish with its key. */
export interface AcceptedPublish {
  ids: string[];
  duplicate: boolean;
}

/**
 * The delivery engine, as the domain sees it. Accepting stores the
 * notifications and queues their first attempts in one durable write: once
 * it resolves, each will be attempted until delivered or failed for good.
 * `subscriptions` are the ones the notifications were made for.
 */
export interface DeliveryQueue {
  accept(notifications: readonly Notification[], subscriptions: readonly Subscription[]): Promise<void>;
  /**
   * Several publishes' notifications in one durable write, each once per
   * client and idempotency key where it has one: a repeated key stores
   * nothing and answers the first call's ids. The items' (client, key) pairs
   * are distinct; the answers come in the items' order.
   */
  acceptBatch(items: readonly PublishedBatchItem[], subscriptions: readonly Subscription[]): Promise<AcceptedPublish[]>;
}
