import type { Logger } from "pino";
import type { Database } from "../store/open-store.js";
import { type ActivityChannel, processOnlyChannel } from "./activity-feed.js";
import { BusActivityChannel } from "./bus-activity-channel.js";
import { MongoMessageBus } from "./mongo-message-bus.js";
import { PostgresMessageBus } from "./postgres-message-bus.js";

/**
 * The live feed's channel between instances on the store's database:
 * LISTEN/NOTIFY on PostgreSQL, a change stream on MongoDB where change
 * streams are on (MONGODB_CHANGE_STREAMS), none for the embedded store (one
 * process) or MongoDB without them (each instance's watchers see its own).
 */
export function createActivityChannel(database: Database, source: string, log: Logger): ActivityChannel {
  const onError = (err: unknown) => log.warn({ err }, "live delivery feed: the channel between instances failed; it reconnects");
  if (database.kind === "postgres") {
    return database.notifications
      ? new BusActivityChannel(new PostgresMessageBus(database.notifications, onError), source, onError)
      : processOnlyChannel;
  }
  return database.changeStreams ? new BusActivityChannel(new MongoMessageBus(database.db, onError), source, onError) : processOnlyChannel;
}
