import type { Client, DeliveryAttempt, Notification, NotificationStatus, Subscription } from "./model.js";

/**
 * The storage port. Each adapter (PostgreSQL/PGlite, MongoDB) implements it
 * and passes the same contract suite (`test/store/store-contract.ts`).
 */
export interface Store {
  readonly clients: ClientStore;
  readonly subscriptions: SubscriptionStore;
  readonly notifications: NotificationStore;
}

export interface ClientStore {
  /** Creates the client if no client holds this key hash; returns the holder. */
  ensureWithKey(name: string, keyHash: string): Promise<Client>;
  findByKeyHash(keyHash: string): Promise<Client | undefined>;
}

export interface SubscriptionStore {
  insert(subscription: Subscription): Promise<void>;
  get(id: string): Promise<Subscription | undefined>;
  /** The client's subscriptions to this exact URL, oldest first. */
  findByUrl(clientId: string, url: string): Promise<Subscription[]>;
}

export interface NotificationStore {
  /** Stores new notifications, not yet handed to the scheduler. */
  insert(notifications: Notification[]): Promise<void>;
  /** Records that the scheduler holds a job for each of these. */
  markScheduled(ids: string[]): Promise<void>;
  /** Accepted notifications that never reached the scheduler (a crash in between). */
  listUnscheduled(createdBefore: Date, limit: number): Promise<string[]>;
  get(id: string): Promise<Notification | undefined>;
  /** Appends the attempt and moves the notification to `status`. */
  recordAttempt(attempt: DeliveryAttempt, status: NotificationStatus): Promise<void>;
  listAttempts(notificationId: string): Promise<DeliveryAttempt[]>;
}

/** The scheduler port: hands accepted notifications to the job queue. */
export interface DeliveryQueue {
  enqueue(notificationIds: string[]): Promise<void>;
}
