import { type Db, MongoClient, type MongoClientOptions } from "mongodb";
import pg from "pg";
import type { Logger } from "pino";
import { StoreFullError } from "../domain/errors.js";
import type { Store } from "../domain/ports.js";
import { StoreConnectError } from "./connect-error.js";
import { createMongoStore, ensureMongoIndexes } from "./mongo/mongo-store.js";
import { asStoreError, probeSpace as probeMongoSpace, reportingErrors } from "./mongo/store-errors.js";
import { trackConnections } from "./postgres/closing-pool.js";
import { EmbeddedPool } from "./postgres/embedded-pool.js";
import { createPostgresStore } from "./postgres/postgres-store.js";
import { migrate } from "./postgres/schema.js";
import type { SqlPool } from "./postgres/sql-pool.js";
import { asStoreFull, probeSpace, watchingSpace } from "./postgres/store-space.js";
import { reportingUnavailable } from "./postgres/unavailable.js";
import { type SpaceReport, StoreSpace } from "./store-space.js";

export type StoreConfig =
  | { kind: "embedded"; dataDir: string }
  | { kind: "postgres"; url: string; poolSize: number }
  /** `changeStreams`: wake every instance's scheduler through a change stream (needs a replica set). */
  | { kind: "mongodb"; url: string; changeStreams: boolean };

/** The database the store lives in, for the delivery jobs (open-jobs.ts) and the live feed to use. */
export type Database =
  | {
      kind: "postgres";
      /** Commits wait for the disk: what the API answers from. */
      api: SqlPool;
      /** Delivery bookkeeping, whose commits do not wait for the disk (see openPostgres); on the embedded store the same session. */
      bookkeeping: SqlPool;
      /** A pool of real connections for LISTEN/NOTIFY between instances (wake-ups, the live feed); absent when embedded (one process only). */
      notifications?: pg.Pool;
    }
  | {
      kind: "mongodb";
      db: Db;
      changeStreams: boolean;
      /** What a driver error means to the domain (mongo/store-errors.ts): the job store reports through it too. */
      report: (error: unknown) => unknown;
    };

/** A ready store plus the database it is in. */
export interface OpenStore {
  /** What the API answers from: a write is durable before the answer. */
  store: Store;
  /**
   * What deliveries write failure streaks and automatic disabling through
   * (their attempts go through the job store, open-jobs.ts, on the same
   * pool). On PostgreSQL and the embedded store it commits without
   * waiting for the disk (see openPostgres); on MongoDB it is `store` itself.
   */
  deliveryStore: Store;
  database: Database;
  /** For logs: which store, never credentials. */
  description: string;
  /** Whether the store has room to write (StoreSpace); /readyz says why not. */
  space(): SpaceReport;
  close(): Promise<void>;
}

export async function openStore(config: StoreConfig, log: Logger): Promise<OpenStore> {
  switch (config.kind) {
    case "embedded":
      return openEmbedded(config.dataDir, log);
    case "postgres":
      return openPostgres(config.url, config.poolSize, log);
    case "mongodb":
      return openMongo(config.url, config.changeStreams, log);
  }
}

/** PGlite runs no autovacuum: the service vacuums the embedded database's tables this often (see EmbeddedPool). */
const VACUUM_EVERY_MS = 10_000;

/** While the store is full, it is probed for room this often (StoreSpace). */
const PROBE_SPACE_EVERY_MS = 1_000;

/** `probe` writes something that needs new room, and rejects while there is none. */
function storeSpace(probe: () => Promise<void>, log: Logger): StoreSpace {
  return new StoreSpace({
    probe,
    probeEveryMs: PROBE_SPACE_EVERY_MS,
    onChange: (reason) =>
      reason === undefined
        ? log.info("the store has room again: writes resume")
        : log.error({ reason }, "the store is full: writes fail until space is freed on its disk"),
  });
}

async function openEmbedded(dataDir: string, log: Logger): Promise<OpenStore> {
  /** Set once the database is open; until then there is nothing to tell. */
  let noticeFull: ((error: StoreFullError) => void) | undefined;
  const onError = (err: Error) => {
    // A vacuum round that found no room: the store is full, which is reported once, not every round.
    const full = asStoreFull(err);
    if (full instanceof StoreFullError && noticeFull) noticeFull(full);
    else log.error({ err }, "embedded database failed");
  };
  const pool = await EmbeddedPool.open(dataDir, STABLE_PLANS, onError, { vacuumEveryMs: VACUUM_EVERY_MS });
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const space = storeSpace(() => probeSpace(pool), log);
  noticeFull = (error) => space.noticed(error);
  const api = watchingSpace(pool, space);
  // Delivery bookkeeping commits without waiting for the disk, as on PostgreSQL (see openPostgres and EmbeddedPool).
  const bookkeeping = watchingSpace(pool.bookkeeping, space);
  return {
    store: createPostgresStore(api),
    deliveryStore: createPostgresStore(bookkeeping),
    database: { kind: "postgres", api, bookkeeping },
    description: `embedded PGlite in ${dataDir}`,
    space: () => space.report(),
    close: () => {
      space.stop();
      return pool.end();
    },
  };
}

/** How long the first connection may take to find a server at start, rather than the driver's 30 s, in silence. */
const MONGODB_START_SELECTION_MS = 5_000;

/**
 * How long a call waits for a server while none answers before it fails (503
 * `unavailable`): as long as a new PostgreSQL connection may take, not the
 * driver's 30 s. The URL's own `serverSelectionTimeoutMS` wins.
 */
function selectionOptions(url: string): MongoClientOptions {
  return /[?&]serverSelectionTimeoutMS=/i.test(url) ? {} : { serverSelectionTimeoutMS: CONNECTING.connectionTimeoutMillis };
}

async function openMongo(url: string, changeStreams: boolean, log: Logger): Promise<OpenStore> {
  // A probe with a shorter server selection still, so that a start without a server fails within 5 s.
  const probe = new MongoClient(url, { serverSelectionTimeoutMS: MONGODB_START_SELECTION_MS });
  try {
    await probe.connect();
  } catch (error) {
    throw new StoreConnectError(redact(url), error);
  } finally {
    await probe.close();
  }
  const client = new MongoClient(url, selectionOptions(url));
  await client.connect();
  try {
    const db = client.db();
    await ensureMongoIndexes(db);
    const space = storeSpace(() => probeMongoSpace(db), log);
    // Driver errors become the domain's (503 `unavailable`, store full or unreachable); a full disk is told to `space`.
    const report = (error: unknown): unknown => {
      const reported = asStoreError(error);
      if (reported instanceof StoreFullError) space.noticed(reported);
      return reported;
    };
    const opened = await createMongoStore(db);
    const store: Store = {
      clients: reportingErrors(opened.clients, report),
      eventTypes: reportingErrors(opened.eventTypes, report),
      subscriptions: reportingErrors(opened.subscriptions, report),
      notifications: reportingErrors(opened.notifications, report),
      stats: reportingErrors(opened.stats, report),
    };
    return {
      store,
      deliveryStore: store,
      database: { kind: "mongodb", db, changeStreams, report },
      description: `MongoDB at ${redact(url)}${changeStreams ? " (change-stream wake-ups)" : ""}`,
      // mongod refusing writes for want of disk space (OutOfDiskSpace, or writes blocked at a disk-use threshold).
      // A mongod that stops instead (WiredTiger aborts when a journal or checkpoint write fails) is an outage.
      space: () => space.report(),
      close: () => {
        space.stop();
        return client.close();
      },
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
 * And no JIT: enable_seqscan=off prices any sequential scan, even of the
 * one-row clients table, past jit_above_cost, and PostgreSQL then compiled
 * such a statement with LLVM at every run (about a second of a core for
 * each retention round's purge).
 */
export const STABLE_PLANS = ["plan_cache_mode=force_generic_plan", "enable_seqscan=off", "jit=off"] as const;

/**
 * Two pools on PostgreSQL. The API's commits wait for the WAL flush: an
 * accepted notification is on disk before the answer. Delivery bookkeeping
 * (job locks and states, attempt records) commits with
 * synchronous_commit=off: a crash of the database server itself can roll
 * back its last few hundred milliseconds, which can only repeat a delivery
 * (same X-JobId), never lose one, and no delivery waits for a disk flush.
 * WAL order keeps the bookkeeping consistent: a rolled-back attempt record
 * takes the later job updates with it. A lost connection is replaced by the
 * pool; each new connection prepares its statements anew.
 */
async function openPostgres(url: string, poolSize: number, log: Logger): Promise<OpenStore> {
  const apiPool = new pg.Pool({ ...withSettings(url, STABLE_PLANS), ...CONNECTING, max: poolSize });
  const bookkeepingPool = new pg.Pool({
    ...withSettings(url, [...STABLE_PLANS, "synchronous_commit=off"]),
    ...CONNECTING,
    // A delivery's statements are short: one that gets no answer for this long fails (its connection
    // is dropped), rather than leaving an attempt waiting on a database that went silent.
    query_timeout: BOOKKEEPING_QUERY_TIMEOUT_MS,
    max: poolSize,
  });
  // Two connections held for LISTEN (the scheduler's wake-ups, the live delivery feed) and two to
  // NOTIFY through; a pool so that each channel can replace its connection when it drops.
  const notifications = new pg.Pool({ ...withSettings(url, []), ...CONNECTING, max: 4 });
  const pools = [apiPool, bookkeepingPool, notifications];
  const ends = pools.map(trackConnections);
  // A lost or refused connection, or a full disk, answers 503 "unavailable", not 500.
  const apiReporting = reportingUnavailable(apiPool);
  const space = storeSpace(() => probeSpace(apiReporting), log);
  const api = watchingSpace(apiReporting, space);
  const bookkeeping = watchingSpace(reportingUnavailable(bookkeepingPool), space);
  // An idle client losing its connection must not crash the process; the pool replaces it.
  // (The error carries its whole client: log what it says, not what it holds.)
  for (const pool of pools) {
    pool.on("error", (err) =>
      log.warn(
        { code: (err as { code?: string }).code, reason: err.message },
        "an idle database connection was lost; the pool replaces it",
      ),
    );
  }
  const close = async () => {
    space.stop();
    await Promise.all(ends.map((end) => end()));
  };
  try {
    (await apiPool.connect()).release();
  } catch (error) {
    await close();
    throw new StoreConnectError(redact(url), error);
  }
  try {
    await migrate(api);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    store: createPostgresStore(api),
    deliveryStore: createPostgresStore(bookkeeping),
    database: { kind: "postgres", api, bookkeeping, notifications },
    description: `PostgreSQL at ${redact(url)}`,
    space: () => space.report(),
    close,
  };
}

/**
 * A new connection that does not open within 10 s fails (the database is
 * unreachable) instead of waiting for the operating system to give up; TCP
 * keep-alive notices a peer that went away while a connection sat idle.
 * The API's pool sets no statement timeout: migrations may take their time.
 */
const CONNECTING = { connectionTimeoutMillis: 10_000, keepAlive: true, keepAliveInitialDelayMillis: 10_000 };
const BOOKKEEPING_QUERY_TIMEOUT_MS = 30_000;

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
