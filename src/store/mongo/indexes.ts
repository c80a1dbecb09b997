import { type Db, MongoServerError } from "mongodb";
import { statsCollection } from "./delivery-stats.js";
import { collections } from "./documents.js";

/**
 * Was (subscriptionId, createdAt). Its successor adds `_id` for cursor ties and takes a new name, since
 * createIndexes refuses an existing name with a different key.
 */
const SUPERSEDED_NOTIFICATION_INDEX = "wh_notifications_subscription_idx";
const INDEX_NOT_FOUND = 27;
const NAMESPACE_NOT_FOUND = 26;

/** Creates the indexes the queries rely on (the SQL migration's, mostly by the same names); safe to run on every start. */
export async function ensureMongoIndexes(db: Db): Promise<void> {
  const c = collections(db);
  // Event types and clients need none: `_id` is their key.
  await Promise.all([
    c.apiKeys.createIndexes([
      { key: { keyHash: 1 }, name: "wh_api_keys_key_hash_key", unique: true },
      { key: { clientId: 1 }, name: "wh_api_keys_client_idx" },
    ]),
    c.subscriptions.createIndexes([
      { key: { clientId: 1, url: 1 }, name: "wh_subscriptions_client_url_idx" },
      { key: { clientId: 1, createdAt: 1, _id: 1 }, name: "wh_subscriptions_client_created_idx" },
      { key: { clientId: 1, event: 1 }, name: "wh_subscriptions_client_event_idx", partialFilterExpression: { enabled: true } },
      // Temporary relay subscriptions' leases (domain/relay-leases.ts): only they have the field.
      { key: { leaseExpiresAt: 1 }, name: "wh_subscriptions_lease_idx", sparse: true },
    ]),
    c.notifications.createIndexes([
      { key: { createdAt: 1 }, name: "wh_notifications_unscheduled_idx", partialFilterExpression: { scheduled: false } },
      { key: { subscriptionId: 1, createdAt: -1, _id: -1 }, name: "wh_notifications_subscription_created_idx" },
      { key: { subscriptionId: 1, status: 1, createdAt: 1 }, name: "wh_notifications_subscription_status_idx" },
      // The retention purge's way through each client's notifications, oldest first.
      { key: { clientId: 1, createdAt: 1, _id: 1 }, name: "wh_notifications_client_created_idx" },
    ]),
    c.attempts.createIndexes([{ key: { notificationId: 1, seq: 1 }, name: "wh_delivery_attempts_notification_idx" }]),
    // A range of minutes or hours: the upserts' and the operator's reads (store/mongo/delivery-stats.ts); one client's.
    statsCollection(db).createIndexes([
      { key: { step: 1, start: 1, endpoint: 1 }, name: "wh_delivery_stats_step_idx" },
      { key: { clientId: 1, step: 1, start: 1 }, name: "wh_delivery_stats_client_idx" },
    ]),
    // The retention purge's way through each client's idempotency keys, oldest first.
    c.idempotencyKeys.createIndexes([{ key: { "_id.clientId": 1, createdAt: 1 }, name: "wh_idempotency_keys_client_created_idx" }]),
  ]);
  // A prefix of its successor, so dropping it loses nothing; another instance may have dropped it first.
  await c.notifications.dropIndex(SUPERSEDED_NOTIFICATION_INDEX).catch((error: unknown) => {
    if (!(error instanceof MongoServerError && (error.code === INDEX_NOT_FOUND || error.code === NAMESPACE_NOT_FOUND))) throw error;
  });
}
