import type { Db } from "mongodb";
import type { Store } from "../../domain/ports.js";
import { MongoClientStore } from "./clients.js";
import { MongoDeliveryStatsStore } from "./delivery-stats.js";
import { collections } from "./documents.js";
import { MongoEventTypeStore } from "./event-types.js";
import { MongoNotificationStore } from "./notifications.js";
import { MongoSubscriptionStore } from "./subscriptions.js";

export { ensureMongoIndexes } from "./indexes.js";

/** The storage port on MongoDB. Call `ensureMongoIndexes` first. */
export async function createMongoStore(db: Db): Promise<Store> {
  const c = collections(db);
  const subscriptions = new MongoSubscriptionStore(c.subscriptions, c.clients, c.notifications, c.attempts, c.throttleSlots);
  return {
    clients: new MongoClientStore(c),
    eventTypes: new MongoEventTypeStore(c.eventTypes),
    subscriptions,
    notifications: new MongoNotificationStore(c.notifications, c.attempts, c.clients, c.idempotencyKeys),
    stats: new MongoDeliveryStatsStore(db),
  };
}
