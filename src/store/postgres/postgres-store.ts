import type { Store } from "../../domain/ports.js";
import { PostgresClientStore } from "./clients.js";
import { PostgresDeliveryStatsStore } from "./delivery-stats.js";
import { PostgresEventTypeStore } from "./event-types.js";
import { PostgresNotificationStore } from "./notifications.js";
import type { SqlPool } from "./sql-pool.js";
import { PostgresSubscriptionStore } from "./subscriptions.js";

/** The storage port on PostgreSQL (a server, or embedded PGlite behind a socket). */
export function createPostgresStore(pool: SqlPool): Store {
  return {
    clients: new PostgresClientStore(pool),
    eventTypes: new PostgresEventTypeStore(pool),
    subscriptions: new PostgresSubscriptionStore(pool),
    notifications: new PostgresNotificationStore(pool),
    stats: new PostgresDeliveryStatsStore(pool),
  };
}
