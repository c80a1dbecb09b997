import { PostgresNotificationChannel } from "@agendajs/postgres-backend";
import type { Database } from "../../store/open-store.js";
import { AgendaDeliveryEngine, type DeliveryEngineOptions } from "./agenda-delivery-engine.js";
import type { DeliveryJobStore } from "./delivery-job-store.js";
import { MongoInsertChannel } from "./mongo-insert-channel.js";
import { MongoJobStore } from "./mongo-job-store.js";
import { PostgresJobStore } from "./postgres-job-store.js";

/** Instances on one PostgreSQL database tell each other of new jobs on this LISTEN/NOTIFY channel. */
const CHANNEL = "wh_delivery_jobs";

/** The job store on the store's own database. `owner` names this instance's locks. */
export function createJobStore(database: Database, options: { owner: string; lockLifetimeMs: number }): DeliveryJobStore {
  switch (database.kind) {
    case "postgres":
      return new PostgresJobStore(
        { api: database.api, bookkeeping: database.bookkeeping },
        { ...options, checkFanOuts: database.checkFanOuts },
      );
    case "mongodb":
      return new MongoJobStore(database.db, options);
  }
}

/** The delivery engine on the store's own database, with the wake-ups between instances that database offers. */
export function createDeliveryEngine(database: Database, options: DeliveryEngineOptions): AgendaDeliveryEngine {
  const store = createJobStore(database, { owner: options.name, lockLifetimeMs: options.lockLifetimeMs });
  switch (database.kind) {
    case "postgres": {
      const remote =
        database.notifications &&
        new PostgresNotificationChannel({
          pool: database.notifications,
          channelName: CHANNEL,
          // Never give up: until it is back, other instances' jobs wait for the poll.
          reconnect: { enabled: true, maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 200, maxDelayMs: 5_000 },
        });
      return new AgendaDeliveryEngine(store, remote, options);
    }
    case "mongodb": {
      const remote = database.changeStreams ? new MongoInsertChannel(database.db, options.name) : undefined;
      return new AgendaDeliveryEngine(store, remote, options);
    }
  }
}
