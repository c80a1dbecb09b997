import { PostgresNotificationChannel } from "@agendajs/postgres-backend";
import type { NotificationChannel } from "agenda";
import type { JobStore } from "../delivery/job-store.js";
import { MongoInsertChannel } from "./mongo/insert-channel.js";
import { MongoJobStore } from "./mongo/jobs.js";
import { reportingErrors } from "./mongo/store-errors.js";
import type { Database } from "./open-store.js";
import { PostgresJobStore } from "./postgres/jobs.js";

/** Instances on one PostgreSQL database tell each other of new jobs on this LISTEN/NOTIFY channel. */
const CHANNEL = "wh_delivery_jobs";

/**
 * The delivery jobs on the store's own database (`owner` names this
 * instance's locks), and the wake-ups between instances that database
 * offers: none on the embedded store (one process), LISTEN/NOTIFY on
 * PostgreSQL, change streams on MongoDB when asked for.
 */
export function openJobs(
  database: Database,
  options: { owner: string; lockLifetimeMs: number },
): { jobs: JobStore; wakeUps: NotificationChannel | undefined } {
  switch (database.kind) {
    case "postgres":
      return {
        jobs: new PostgresJobStore({ api: database.api, bookkeeping: database.bookkeeping }, options),
        wakeUps:
          database.notifications &&
          new PostgresNotificationChannel({
            pool: database.notifications,
            channelName: CHANNEL,
            // Never give up: until it is back, other instances' jobs wait for the poll.
            reconnect: { enabled: true, maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 200, maxDelayMs: 5_000 },
          }),
      };
    case "mongodb":
      return {
        jobs: reportingErrors(new MongoJobStore(database.db, options), database.report),
        wakeUps: database.changeStreams ? new MongoInsertChannel(database.db, options.owner) : undefined,
      };
  }
}
