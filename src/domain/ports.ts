import type { ApiKeyRecord, Client, DeliveryAttempt, EventType, Notification, NotificationStatus, Subscription } from "./model.js";

/**
 * The storage port. Each adapter (PostgreSQL/PGlite, MongoDB) implements it
 * and passes the same contract suite (`test/store/store-contract.ts`).
 */
export interface Store {
  readonly clients: ClientStore;
  readonly eventTypes: EventTypeStore;
  readonly subscriptions: SubscriptionStore;
  readonly notifications: NotificationStore;
}

/** A position in a list ordered by (createdAt, id). */
export interface Cursor {
  createdAt: Date;
  id: string;
}

export interface ClientStore {
  /** Creates the client if no client holds this key hash; returns the holder. */
  ensureWithKey(name: string, keyHash: string): Promise<Client>;
  /** The client holding this unrevoked key. */
  findByKeyHash(keyHash: string): Promise<Client | undefined>;
  create(client: Client, key: ApiKeyRecord): Promise<void>;
  get(id: string): Promise<Client | undefined>;
  list(): Promise<Client[]>;
  addKey(key: ApiKeyRecord): Promise<void>;
  /** False when the client has no such key. Revoking twice is fine. */
  revokeKey(clientId: string, keyId: string, at: Date): Promise<boolean>;
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

export interface SubscriptionStore {
  insert(subscription: Subscription): Promise<void>;
  get(id: string): Promise<Subscription | undefined>;
  /** The client's subscriptions to this exact URL, oldest first. */
  findByUrl(clientId: string, url: string): Promise<Subscription[]>;
  /** The client's subscriptions, oldest first, after `after`. */
  listByClient(clientId: string, limit: number, after?: Cursor): Promise<Subscription[]>;
  /**
   * The client's enabled subscriptions to this event (publishing fans out to
   * these); callers may share one answer, so none changes it. The answer may
   * be one kept from an earlier read (see DeliveryQueue.accept); `fresh`
   * reads the database now.
   */
  listEnabledForEvent(clientId: string, event: string, options?: { fresh?: boolean }): Promise<Subscription[]>;
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
  /**
   * Starts a failure streak unless one runs (then it writes nothing); returns
   * when the streak began, or undefined when the subscription is gone or
   * another write began the streak at the same moment.
   */
  markFailing(id: string, at: Date): Promise<Date | undefined>;
  /** Ends a failure streak. */
  markHealthy(id: string): Promise<void>;
  /** Disables it with a reason unless it is disabled already. */
  disable(id: string, reason: string, at: Date): Promise<void>;
}

export interface NotificationQuery {
  subscriptionId: string;
  status?: NotificationStatus;
  limit: number;
  /** Newest first, strictly before this position. */
  before?: Cursor;
}

/** Notifications as stored; they are created through the DeliveryQueue, which queues them in the same write. */
/** What an attempt reads: the notification and its subscription (absent once deleted). */
export interface DeliveryRead {
  notification: Notification;
  subscription?: Subscription;
}

export interface NotificationStore {
  get(id: string): Promise<Notification | undefined>;
  /** What an attempt needs, in one read: the notification and its subscription (absent once deleted). */
  getForDelivery(id: string): Promise<DeliveryRead | undefined>;
  list(query: NotificationQuery): Promise<Notification[]>;
  /** Failed notifications of a subscription created at or after `since`, oldest first. */
  listFailedSince(subscriptionId: string, since: Date, limit: number): Promise<Notification[]>;
  /** Appends the attempt and moves the notification to `status`. */
  recordAttempt(attempt: DeliveryAttempt, status: NotificationStatus): Promise<void>;
  listAttempts(notificationId: string): Promise<DeliveryAttempt[]>;
}

/**
 * The delivery engine, as the domain sees it. Accepting stores the
 * notifications and queues their first attempts in one durable write: once
 * it resolves, each will be attempted until delivered or failed for good.
 * `subscriptions` are the ones the notifications were made for. Where
 * fan-outs are kept between publishes on a database other instances write
 * to, an accept checks that `subscriptions` are still the enabled ones of
 * their client and event, as read, and otherwise stores nothing and rejects
 * with FanOutChangedError: read them fresh and fan out again. With
 * `{ check: false }` it stores them as read, whatever changed since (the
 * last of a publish's reads).
 */
export interface DeliveryQueue {
  accept(notifications: readonly Notification[], subscriptions: readonly Subscription[], options?: AcceptOptions): Promise<void>;
  /** The same, once per client and idempotency key: a repeated key stores nothing and answers the first call's ids. */
  acceptOnce(
    clientId: string,
    key: string,
    notifications: readonly Notification[],
    subscriptions: readonly Subscription[],
    options?: AcceptOptions,
  ): Promise<{ ids: string[]; duplicate: boolean }>;
}

export interface AcceptOptions {
  /** Whether the accept may refuse a fan-out that changed since it was read (FanOutChangedError); true unless said. */
  check?: boolean;
}
