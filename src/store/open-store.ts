import { MongoBackend, MongoChangeStreamNotificationChannel } from "@agendajs/mongo-backend";
import { PostgresBackend } from "@agendajs/postgres-backend";
import { type AgendaBackend, InMemoryNotificationChannel, type NotificationChannel } from "agenda";
import { MongoClient } from "mongodb";
import pg from "pg";
import type { Logger } from "pino";
import type { BulkJobOperations, QueuedInsert } from "../delivery/job-batching.js";
import type { Notification } from "../domain/model.js";
import type { Store } from "../domain/ports.js";
import { createMongoStore, ensureMongoIndexes } from "./mongo/mongo-store.js";
import { createPostgresBulkJobOperations, createPostgresDeliveryScheduler, createPostgresQueuedInsert } from "./postgres/agenda-jobs.js";
import { startEmbeddedPostgres } from "./postgres/embedded-pglite.js";
import { createPostgresStore } from "./postgres/postgres-store.js";
import { migrate } from "./postgres/schema.js";

export type StoreConfig =
  | { kind: "embedded"; dataDir: string }
  | { kind: "postgres"; url: string; poolSize: number }
  /** `changeStreams`: wake every instance's scheduler through a change stream (needs a replica set). */
  | { kind: "mongodb"; url: string; changeStreams: boolean };

/** A ready store plus the Agenda backend on the same database. */
export interface OpenStore {
  /** What the API answers from: a write is durable before the answer. */
  store: Store;
  /**
   * What deliveries write their bookkeeping through (attempts, failure
   * streaks), next to Agenda's jobs. It may commit without waiting for the
   * disk (see openPostgres); elsewhere it is `store` itself.
   */
  deliveryStore: Store;
  agendaBackend: AgendaBackend;
  /** Set where the backend's own channel can't reach this process's scheduler. */
  notificationChannel?: NotificationChannel;
  /** Claims notifications and inserts their Agenda jobs atomically, where the backend allows it. */
  scheduleDeliveries?: (notificationIds: readonly string[], jobName: string, lastModifiedBy: string) => Promise<string | undefined>;
  /** Stores and queues new notifications in one durable statement (PostgreSQL), some jobs locked for the caller. */
  insertQueued?: (notifications: Notification[], jobName: string, lastModifiedBy: string, lockUpTo?: () => number) => Promise<QueuedInsert>;
  /** Agenda's per-job statements for many jobs at once, where the backend allows it. */
  bulkJobs?: BulkJobOperations;
  /** For logs: which store, never credentials. */
  description: string;
  close(): Promise<void>;
}

/**
 * PGlite is one session. pglite-socket can multiplex several connections onto
 * it, but interleaves their extended-protocol messages under load ("bind
 * message supplies 16 parameters, but prepared statement requires 5"), so
 * the embedded store gets exactly one connection; PGlite runs one query at a
 * time anyway.
 */
const EMBEDDED_POOL_SIZE = 1;

export async function openStore(config: StoreConfig, log: Logger): Promise<OpenStore> {
  switch (config.kind) {
    case "embedded": {
      const embedded = await startEmbeddedPostgres(config.dataDir, EMBEDDED_POOL_SIZE, STABLE_PLANS);
      try {
        // PGlite is one session behind a multiplexer, so LISTEN/NOTIFY can't
        // wake the scheduler; the process is alone on it, so in-memory works.
        const opened = await openPostgres(
          embedded.connectionString,
          EMBEDDED_POOL_SIZE,
          `embedded PGlite in ${config.dataDir}`,
          log,
          new InMemoryNotificationChannel(),
        );
        const close = async () => {
          await opened.close();
          await embedded.close();
        };
        return { ...opened, close };
      } catch (error) {
        await embedded.close();
        throw error;
      }
    }
    case "postgres":
      return openPostgres(config.url, config.poolSize, `PostgreSQL at ${redact(config.url)}`, log, undefined, { asyncBookkeeping: true });
    case "mongodb":
      return openMongo(config.url, config.changeStreams);
  }
}

async function openMongo(url: string, changeStreams: boolean): Promise<OpenStore> {
  const client = new MongoClient(url);
  await client.connect();
  try {
    const db = client.db();
    await ensureMongoIndexes(db);
    const store = await createMongoStore(db);
    return {
      store,
      deliveryStore: store,
      agendaBackend: new MongoBackend({ mongo: db, collection: "wh_agenda_jobs" }),
      // MongoDB has no LISTEN/NOTIFY: in-process wake-ups for one instance,
      // a change stream on the jobs collection when several share the database.
      notificationChannel: changeStreams
        ? new MongoChangeStreamNotificationChannel({ db, collection: "wh_agenda_jobs" })
        : new InMemoryNotificationChannel(),
      description: `MongoDB at ${redact(url)}${changeStreams ? " (change-stream wake-ups)" : ""}`,
      close: () => client.close(),
    };
  } catch (error) {
    await client.close();
    throw error;
  }
}

/**
 * Plans that do not drift. Our hot statements are named, so each connection
 * prepares them once, and with force_generic_plan their one generic plan
 * serves every run: planning each run for its values cost as much as running
 * it (~0.15 ms for each of a notification's four statements when they go one
 * by one). Unnamed statements still plan at each run, also without looking at
 * their values, so none may rely on a parameter being NULL (list queries
 * write only the conditions they use). A generic plan is made from the
 * statistics of the moment: made while a table was small (a new database, or
 * no autovacuum to ANALYZE it), "WHERE id = ANY($1)" became a sequential scan
 * and stayed one as the table grew (17 ms per delivery read after 17 000
 * notifications). enable_seqscan=off makes the planner take an index wherever
 * one applies; the few lists with no fitting index (clients) are small.
 */
export const STABLE_PLANS = ["plan_cache_mode=force_generic_plan", "enable_seqscan=off"] as const;

/**
 * Two pools on PostgreSQL. The API's commits wait for the WAL flush: an
 * accepted notification is on disk before the answer. Delivery bookkeeping
 * (Agenda's job rows, scheduling, attempt records) commits with
 * synchronous_commit=off: a crash of the database server itself can roll
 * back its last few hundred milliseconds, which can only repeat a delivery
 * (same X-JobId; the sweep re-queues a notification whose scheduling rolled
 * back), never lose one, and no delivery waits for a disk flush. WAL order
 * keeps the bookkeeping consistent: a rolled-back attempt record takes the
 * later job updates with it.
 */
async function openPostgres(
  url: string,
  poolSize: number,
  description: string,
  log: Logger,
  notificationChannel?: NotificationChannel,
  { asyncBookkeeping = false } = {},
): Promise<OpenStore> {
  const pool = new pg.Pool({ ...withSettings(url, STABLE_PLANS), max: poolSize });
  const bookkeeping = asyncBookkeeping
    ? new pg.Pool({ ...withSettings(url, [...STABLE_PLANS, "synchronous_commit=off"]), max: poolSize })
    : pool;
  const pools = bookkeeping === pool ? [pool] : [pool, bookkeeping];
  // An idle client losing its connection must not crash the process; the pool replaces it.
  for (const p of pools) p.on("error", (err) => log.error({ err }, "idle database connection failed"));
  const close = async () => {
    await Promise.all(pools.map((p) => p.end()));
  };
  try {
    await migrate(pool);
  } catch (error) {
    await close();
    throw error;
  }
  const store = createPostgresStore(pool);
  return {
    store,
    deliveryStore: bookkeeping === pool ? store : createPostgresStore(bookkeeping),
    agendaBackend: new PostgresBackend({ pool: bookkeeping }),
    scheduleDeliveries: createPostgresDeliveryScheduler(bookkeeping),
    // On the API's pool: accepting is a durable commit.
    insertQueued: createPostgresQueuedInsert(pool),
    bulkJobs: createPostgresBulkJobOperations(bookkeeping),
    ...(notificationChannel ? { notificationChannel } : {}),
    description,
    close,
  };
}

/**
 * The URL with more `-c` settings in the startup `options`, after the URL's
 * own (pg would let the URL's `options` override a separate one altogether).
 */
export function withSettings(url: string, settings: readonly string[]): { connectionString: string; options: string } {
  const parsed = new URL(url);
  const own = parsed.searchParams.get("options") ?? "";
  parsed.searchParams.delete("options");
  return { connectionString: parsed.toString(), options: [own, ...settings.map((setting) => `-c ${setting}`)].join(" ").trim() };
}

/** A connection URL without its password, for logs. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    // Query parameters can carry secrets too (password=, sslpassword=, AWS tokens).
    for (const key of [...parsed.searchParams.keys()]) parsed.searchParams.set(key, "***");
    return parsed.toString();
  } catch {
    return "(unparseable URL)";
  }
}
