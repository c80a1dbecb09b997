import { Coalescer } from "../../coalescer.js";
import { FanOutChangedError } from "../../domain/errors.js";
import type { Subscription } from "../../domain/model.js";
import { type ArrayElement, arrayLiteral } from "../../store/postgres/array-literal.js";
import { currentFanOutPrint, fanOutPrint } from "../../store/postgres/fan-out-versions.js";
import {
  type ForDeliveryRow,
  forDeliveryColumns,
  forDeliveryOfRows,
  INSERT_NOTIFICATIONS,
  insertParameters,
  RECORD_ATTEMPTS_CTES,
  recordParameters,
} from "../../store/postgres/notifications.js";
import { isDataError } from "../../store/postgres/rows.js";
import type { SqlPool } from "../../store/postgres/sql-pool.js";
import { inTransaction } from "../../store/postgres/transaction.js";
import { type LockedBatch, type LockRequest, scanWindow } from "../job-source.js";
import type {
  DeliveryJobStore,
  FinishedRun,
  JobCounts,
  JobState,
  LockedJob,
  LockRenewal,
  NewDelivery,
  RetriedRun,
  StoredJob,
} from "./delivery-job-store.js";
import { prepareJobTable } from "./postgres-job-schema.js";

interface JobRow {
  id: string;
  endpoint: string;
  client_id: string;
  next_run_at: Date | null;
  locked_at: Date | null;
  locked_by: string | null;
  last_run_at: Date | null;
  last_finished_at: Date | null;
  fail_count: number;
  fail_reason: string | null;
  failed_at: Date | null;
  trace_context: string | null;
}

function toJob(row: JobRow): StoredJob {
  const job: StoredJob = {
    id: row.id,
    endpoint: row.endpoint,
    clientId: row.client_id,
    nextRunAt: row.next_run_at,
    failCount: row.fail_count,
  };
  if (row.locked_at) job.lockedAt = row.locked_at;
  if (row.locked_by) job.lastModifiedBy = row.locked_by;
  if (row.last_run_at) job.lastRunAt = row.last_run_at;
  if (row.last_finished_at) job.lastFinishedAt = row.last_finished_at;
  if (row.fail_reason !== null) job.failReason = row.fail_reason;
  if (row.failed_at) job.failedAt = row.failed_at;
  if (row.trace_context) job.traceContext = row.trace_context;
  return job;
}

/**
 * Locks due jobs ($1 limit, $2 scan window) for $3 (owner) at $4 (lock
 * time), oldest due first, and jobs whose lock is older than $5 (their
 * holder is presumed dead). Each endpoint gets at most its budget (the
 * arrays $6/$7, else $8), then each client at most its own ($9/$10, else
 * $11) among what its endpoints' budgets let through. Endpoints and clients
 * with a budget of 0 are left out ($12, $13); the due scan still reads
 * their rows (the index is ordered by due time alone), which costs about a
 * microsecond per row. Due rows and expired locks are looked up apart, each
 * on its own index: as one OR, the planner reads and sorts every due row.
 *
 * The scans read without locking: only the rows chosen are locked, skipping
 * those another instance is locking at the same moment, and checked again
 * (still due and unlocked, or still expired) once locked, so that two
 * instances never take one job. Locking every row scanned would write each
 * of them, twice, for the many a budget passes over.
 *
 * Every row it reads by id (the jobs picked, to lock them; their
 * notifications and subscriptions) it finds by `id = ANY (ARRAY(…))`, an
 * index condition whatever the statistics, rather than by a join: a plan
 * made while a table was empty and analyzed (the queue drained, a new
 * database) believes it holds one row, and joined by reading the whole table
 * once per row (300 ms to a second a statement under a burst of 20 000 jobs,
 * until the next ANALYZE). Notifications and subscriptions are read in id
 * order, as READ_FOR_DELIVERY reads them, so through their primary keys.
 * The picked jobs' second check is a CASE, which no index can serve:
 * written as the scans' conditions, a plan made while few jobs were due
 * read every due job through the partial indexes to find the few picked.
 *
 * Each locked row comes with what its attempt reads (its notification and
 * subscription), so that an attempt run soon after need not read it again.
 *
 * Besides the locked rows the statement answers how many due rows the
 * window read (a full window: more may be due) and which endpoints and
 * clients had due rows their budget passed over (on its first row only:
 * each row would bring and parse its own copy).
 */
export const LOCK_DUE = `
  WITH due AS (
    SELECT id, endpoint, client_id, next_run_at FROM wh_delivery_jobs
    WHERE locked_at IS NULL AND next_run_at <= GREATEST($4::timestamptz, now())
      AND endpoint <> ALL($12::text[]) AND client_id <> ALL($13::text[])
    ORDER BY next_run_at
    LIMIT $2
  ), expired AS (
    SELECT id, endpoint, client_id, next_run_at FROM wh_delivery_jobs
    WHERE locked_at <= $5 AND endpoint <> ALL($12::text[]) AND client_id <> ALL($13::text[])
    ORDER BY locked_at
    LIMIT $1
  ), by_endpoint AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.endpoint ORDER BY c.next_run_at, c.id) <= COALESCE(e.budget, $8) AS endpoint_within
    FROM (SELECT * FROM due UNION ALL SELECT * FROM expired) AS c
    LEFT JOIN unnest($6::text[], $7::int[]) AS e (endpoint, budget) ON e.endpoint = c.endpoint
  ), by_client AS (
    SELECT w.id, w.client_id, w.next_run_at,
           row_number() OVER (PARTITION BY w.client_id ORDER BY w.next_run_at, w.id) <= COALESCE(b.budget, $11) AS client_within
    FROM by_endpoint AS w
    LEFT JOIN unnest($9::text[], $10::int[]) AS b (client_id, budget) ON b.client_id = w.client_id
    WHERE w.endpoint_within
  ), picked AS (
    SELECT id FROM by_client WHERE client_within ORDER BY next_run_at NULLS FIRST, id LIMIT $1
  ), chosen AS (
    SELECT j.id FROM wh_delivery_jobs j
    WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
      AND CASE WHEN j.locked_at IS NULL THEN j.next_run_at <= GREATEST($4::timestamptz, now()) ELSE j.locked_at <= $5 END
    FOR UPDATE OF j SKIP LOCKED
  ), locked AS (
    UPDATE wh_delivery_jobs SET locked_at = $4, locked_by = $3, next_run_at = COALESCE(next_run_at, $4)
    WHERE id = ANY (ARRAY(SELECT id FROM chosen))
    RETURNING *
  ), read_notifications AS MATERIALIZED (
    SELECT * FROM wh_notifications WHERE id = ANY (ARRAY(SELECT id FROM locked)) ORDER BY id
  ), read_subscriptions AS MATERIALIZED (
    SELECT * FROM wh_subscriptions WHERE id = ANY (ARRAY(SELECT subscription_id FROM read_notifications)) ORDER BY id
  )
  SELECT (SELECT count(*) FROM due)::int AS scanned,
         CASE WHEN row_number() OVER () = 1 THEN ARRAY(SELECT DISTINCT endpoint FROM by_endpoint WHERE NOT endpoint_within) END
           AS passed_endpoints,
         CASE WHEN row_number() OVER () = 1 THEN ARRAY(SELECT DISTINCT client_id FROM by_client WHERE NOT client_within) END
           AS passed_clients,
         locked.*, ${forDeliveryColumns("row_number() OVER (PARTITION BY s.id ORDER BY locked.id) = 1")}
  FROM (SELECT 1) AS one LEFT JOIN locked ON true
    LEFT JOIN read_notifications n ON n.id = locked.id LEFT JOIN read_subscriptions s ON s.id = n.subscription_id`;

/** The jobs of the notifications `inserted` (a CTE): their ids, endpoints, whether locked and trace contexts are $11, $12, $13, $16; the time $14, the owner $15. */
const INSERT_JOBS = `
  INSERT INTO wh_delivery_jobs (id, endpoint, client_id, next_run_at, locked_at, locked_by, trace_context)
  SELECT i.id, input.endpoint, i.client_id, $14::timestamptz, CASE WHEN input.locked THEN $14::timestamptz END, CASE WHEN input.locked THEN $15 END,
         input.trace_context
  FROM inserted i JOIN unnest($11::text[], $12::text[], $13::bool[], $16::text[]) AS input (id, endpoint, locked, trace_context) ON input.id = i.id`;

/** Notifications and their jobs in one statement: the notification columns ($1…$10), then the jobs' (see `insertValues`). */
const INSERT = `
  WITH inserted AS (${INSERT_NOTIFICATIONS} RETURNING id, client_id)
  ${INSERT_JOBS}`;

/**
 * INSERT, each fan-out checked (fan-out-versions.ts): $17…$20 hold, for
 * each checked call, its client, event, print, and the ids of its
 * notifications joined by commas. A call whose print is no longer the
 * table's stores nothing; the statement answers the position (from 1) of
 * each such call. The check reads in the statement's snapshot, the one its
 * inserts are made in: a change committed before it is seen, one committed
 * after it comes after the publish.
 */
export const INSERT_CHECKED = `
  WITH changed AS (
    SELECT c.n, c.ids FROM unnest($17::text[], $18::text[], $19::text[], $20::text[]) WITH ORDINALITY AS c (client_id, event, print, ids, n)
    WHERE c.print IS DISTINCT FROM ${currentFanOutPrint("c.client_id", "c.event")}
  ), inserted AS (${INSERT_NOTIFICATIONS}
    WHERE t.id <> ALL (ARRAY(SELECT unnest(string_to_array(changed.ids, ',')) FROM changed))
    RETURNING id, client_id
  ), jobs AS (${INSERT_JOBS})
  SELECT n::int FROM changed`;

/** A fan-out to check as it is inserted: its client, event and print (fan-out-versions.ts). */
interface FanOutCheck {
  clientId: string;
  event: string;
  print: string;
}

/** The check of `fanOut`, when the notifications of `deliveries` were all made from it and its versions are known. */
function checkOf(deliveries: readonly NewDelivery[], fanOut: readonly Subscription[] | undefined): FanOutCheck | undefined {
  const first = fanOut?.[0];
  const print = fanOut && fanOutPrint(fanOut);
  if (!first || print === undefined) return undefined;
  const ids = new Set(fanOut.map((subscription) => subscription.id));
  const fromIt = (delivery: NewDelivery) =>
    ids.has(delivery.notification.subscriptionId) &&
    delivery.notification.clientId === first.clientId &&
    delivery.notification.event === first.event;
  return deliveries.every(fromIt) ? { clientId: first.clientId, event: first.event, print } : undefined;
}

/** INSERT_CHECKED's parameters after INSERT's: each checked call's client, event, print and joined notification ids. */
function checkValues(checked: ReadonlyArray<{ check: FanOutCheck; deliveries: readonly NewDelivery[] }>): unknown[] {
  return [
    checked.map(({ check }) => check.clientId),
    checked.map(({ check }) => check.event),
    checked.map(({ check }) => check.print),
    checked.map(({ deliveries }) => deliveries.map((delivery) => delivery.notification.id).join(",")),
  ];
}

/**
 * The job INSERT writes for `delivery` when it goes in locked by `owner` at
 * `at`, as a lock would read it back: the statement inserts every row or
 * fails, so nothing needs to come back from it.
 */
function insertedLocked(delivery: NewDelivery, at: Date, owner: string): LockedJob {
  const job: LockedJob = {
    id: delivery.notification.id,
    endpoint: delivery.endpoint,
    clientId: delivery.notification.clientId,
    nextRunAt: at,
    failCount: 0,
    lockedAt: at,
    lastModifiedBy: owner,
  };
  if (delivery.traceContext) job.traceContext = delivery.traceContext;
  return job;
}

/** INSERT's parameters: the notifications', then each job's id, endpoint and whether it goes in locked, the time (`at`), the owner and trace contexts. */
function insertValues(deliveries: readonly NewDelivery[], locked: readonly boolean[], at: Date, owner: string | null): unknown[] {
  return [
    ...insertParameters(deliveries.map((delivery) => delivery.notification)),
    arrayLiteral(deliveries.map((delivery) => delivery.notification.id)),
    arrayLiteral(deliveries.map((delivery) => delivery.endpoint)),
    arrayLiteral(locked),
    at,
    owner,
    arrayLiteral(deliveries.map((delivery) => delivery.traceContext ?? null)),
  ];
}

/**
 * The queue's counts (metrics scrape them), each on its own partial index:
 * one FILTERed count over the table would read every row.
 */
export const COUNT_JOBS = `
  SELECT (SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NULL AND next_run_at <= now())::int AS due,
         (SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NULL AND next_run_at > now())::int AS scheduled,
         (SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NOT NULL)::int AS locked,
         (SELECT min(next_run_at) FROM wh_delivery_jobs WHERE locked_at IS NULL AND next_run_at <= now()) AS "oldestDueAt"`;

/**
 * Where a job named by id (t.id) still has the lock its caller holds
 * (t.held_lock): the condition of every statement on jobs a run holds (save,
 * renew, remove, unlock). It finds each row through the primary key
 * (`id = ANY`) and compares the lock with IS NOT DISTINCT FROM, which no index
 * serves (a held lock is never NULL; one that were would match nothing). With
 * a plain `=` the planner reads the rows through the locked-jobs index
 * instead: it looks small, but holds an entry for every job locked since the
 * last vacuum (tens of thousands under load), and a delete of 64 jobs read ten
 * times the pages it needs.
 */
const STILL_HELD = "j.id = ANY($1::text[]) AND j.id = t.id AND t.held_lock IS NOT NULL AND j.locked_at IS NOT DISTINCT FROM t.held_lock";

/**
 * Each ended run's state, written only where the job still has the lock its
 * run held; the lock is released. The job ids are `$1`, the rest of the
 * state the seven parameters from `$first` on (see stateParameters).
 */
function saveJobs(first: number): string {
  const [held, next, lastRun, lastFinished, failCount, failReason, failedAt] = Array.from({ length: 7 }, (_, i) => `$${first + i}`);
  return `
  UPDATE wh_delivery_jobs AS j
  SET next_run_at = t.next_run_at, locked_at = NULL, locked_by = NULL, last_run_at = t.last_run_at,
      last_finished_at = t.last_finished_at, fail_count = t.fail_count, fail_reason = t.fail_reason, failed_at = t.failed_at
  FROM unnest($1::text[], ${held}::timestamptz[], ${next}::timestamptz[], ${lastRun}::timestamptz[], ${lastFinished}::timestamptz[],
              ${failCount}::int[], ${failReason}::text[], ${failedAt}::timestamptz[])
    AS t (id, held_lock, next_run_at, last_run_at, last_finished_at, fail_count, fail_reason, failed_at)
  WHERE ${STILL_HELD}
  RETURNING j.id, t.held_lock`;
}

export const SAVE = saveJobs(2);

/** saveJobs' parameters from `$first` on, one array literal per column. */
function stateParameters(states: readonly JobState[]): string[] {
  const column = (pick: (job: JobState) => ArrayElement) => arrayLiteral(states.map(pick));
  return [
    column((job) => job.heldLock),
    column((job) => job.nextRunAt),
    column((job) => job.lastRunAt ?? null),
    column((job) => job.lastFinishedAt ?? null),
    column((job) => job.failCount ?? 0),
    column((job) => job.failReason ?? null),
    column((job) => job.failedAt ?? null),
  ];
}

/** Locks moved forward, where the job still has the lock its run held. */
export const RENEW = `
  UPDATE wh_delivery_jobs AS j SET locked_at = t.locked_at
  FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS t (id, held_lock, locked_at)
  WHERE ${STILL_HELD}
  RETURNING j.id, t.held_lock`;

/** The jobs that still have their held lock ($2), deleted. */
export const REMOVE = `
  DELETE FROM wh_delivery_jobs AS j USING unnest($1::text[], $2::timestamptz[]) AS t (id, held_lock)
  WHERE ${STILL_HELD}
  RETURNING j.id, t.held_lock`;

/**
 * Runs' last attempts recorded (RECORD_ATTEMPTS_CTES, $1…$9; $1 holds the
 * notification ids, which are the job ids) and their jobs deleted where
 * still held ($10), in one statement: one round trip and one commit where
 * the record and the delete would take two. It locks the jobs (the
 * `removed` CTE, which the statement reads, runs first) and then the
 * notifications; nothing locks a notification and then its job (a deleted
 * subscription ends its notifications alone), so no two statements wait on
 * each other in the opposite order.
 */
export const FINISH = `
  ${RECORD_ATTEMPTS_CTES}, removed AS (
    DELETE FROM wh_delivery_jobs AS j USING unnest($1::text[], $10::timestamptz[]) AS t (id, held_lock)
    WHERE ${STILL_HELD}
    RETURNING j.id, t.held_lock
  )
  SELECT id, held_lock FROM removed`;

/**
 * Runs' failed attempts recorded (RECORD_ATTEMPTS_CTES, $1…$9; $1 holds the
 * notification ids, which are the job ids) and their jobs' states saved
 * where still held ($10…$16, as SAVE), in one statement, as FINISH does and
 * for the same reasons: the jobs are locked (the `saved` CTE) before the
 * notifications.
 */
export const RETRY = `
  ${RECORD_ATTEMPTS_CTES}, saved AS (${saveJobs(10)}
  )
  SELECT id, held_lock FROM saved`;

/**
 * Locks handed back where still held as given. A job handed back left
 * without a schedule would never be due again: it is due now.
 */
export const UNLOCK = `
  UPDATE wh_delivery_jobs AS j SET locked_at = NULL, locked_by = NULL, next_run_at = COALESCE(j.next_run_at, now())
  FROM unnest($1::text[], $2::timestamptz[]) AS t (id, held_lock)
  WHERE ${STILL_HELD}`;

/**
 * Which of `jobs` a statement touched, from the id and held lock of each
 * row it answers: two runs of one job under different locks can share a
 * statement, and only the one holding the lock wrote.
 */
function touched(jobs: ReadonlyArray<{ id: string; heldLock: Date }>, rows: ReadonlyArray<{ id: string; held_lock: Date }>): boolean[] {
  const written = new Set(rows.map((row) => `${row.id} ${row.held_lock.getTime()}`));
  return jobs.map((job) => written.has(`${job.id} ${job.heldLock.getTime()}`));
}

type Held = { id: string; heldLock: Date };
type Insert = { deliveries: readonly NewDelivery[]; lockFor: (deliveries: readonly NewDelivery[]) => boolean[]; check?: FanOutCheck };

/**
 * Delivery jobs in PostgreSQL (or embedded PGlite), in `wh_delivery_jobs`
 * next to the notifications. Accepting goes through `api` (its commit waits
 * for the disk: an accepted notification is durable before the answer);
 * the jobs' own bookkeeping through `bookkeeping` (see open-store.ts).
 * Statements of calls arriving together are shared (coalescer.ts).
 */
export class PostgresJobStore implements DeliveryJobStore {
  /** Each call's jobs inserted locked; FanOutChangedError for a checked call whose fan-out changed (nothing of it stored). */
  readonly #inserts: Coalescer<Insert, LockedJob[] | FanOutChangedError>;
  readonly #saves: Coalescer<JobState, boolean>;
  readonly #renewals: Coalescer<LockRenewal, boolean>;
  readonly #removes: Coalescer<Held, boolean>;
  readonly #finishes: Coalescer<FinishedRun, boolean>;
  readonly #retries: Coalescer<RetriedRun, boolean>;

  constructor(
    private readonly pools: { api: SqlPool; bookkeeping: SqlPool },
    private readonly options: {
      /** This instance's name: the holder of the locks it takes. */
      owner: string;
      /** A lock older than this is presumed dead, and its job taken by whoever asks. */
      lockLifetimeMs: number;
      /**
       * Check each fan-out as it is inserted (INSERT_CHECKED): the fan-outs
       * publishes read may be kept (FanOutCache) while other instances
       * write the subscriptions.
       */
      checkFanOuts?: boolean;
    },
  ) {
    this.#inserts = new Coalescer((calls) => this.#insert(calls), { splitOn: isDataError });
    this.#saves = new Coalescer(
      async (jobs) => {
        const { rows } = await pools.bookkeeping.query<{ id: string; held_lock: Date }>({
          name: "wh-save-jobs",
          text: SAVE,
          values: [arrayLiteral(jobs.map((job) => job.id)), ...stateParameters(jobs)],
        });
        return touched(jobs, rows);
      },
      { splitOn: isDataError },
    );
    this.#renewals = new Coalescer(async (jobs) => {
      const { rows } = await pools.bookkeeping.query<{ id: string; held_lock: Date }>({
        name: "wh-renew-jobs",
        text: RENEW,
        values: [
          arrayLiteral(jobs.map((job) => job.id)),
          arrayLiteral(jobs.map((job) => job.heldLock)),
          arrayLiteral(jobs.map((job) => job.lockedAt)),
        ],
      });
      return touched(jobs, rows);
    });
    this.#finishes = new Coalescer(
      async (runs) => {
        const { rows } = await pools.bookkeeping.query<{ id: string; held_lock: Date }>({
          name: "wh-finish-jobs",
          text: FINISH,
          values: [...recordParameters(runs), arrayLiteral(runs.map((run) => run.heldLock))],
        });
        return touched(
          runs.map((run) => ({ id: run.attempt.notificationId, heldLock: run.heldLock })),
          rows,
        );
      },
      { splitOn: isDataError },
    );
    this.#retries = new Coalescer(
      async (runs) => {
        const { rows } = await pools.bookkeeping.query<{ id: string; held_lock: Date }>({
          name: "wh-retry-jobs",
          text: RETRY,
          values: [
            ...recordParameters(runs.map((run) => ({ attempt: run.attempt, status: "pending" }))),
            ...stateParameters(runs.map((run) => run.state)),
          ],
        });
        return touched(
          runs.map((run) => ({ id: run.attempt.notificationId, heldLock: run.state.heldLock })),
          rows,
        );
      },
      { splitOn: isDataError },
    );
    this.#removes = new Coalescer(async (jobs) => {
      const { rows } = await pools.bookkeeping.query<{ id: string; held_lock: Date }>({
        name: "wh-remove-jobs",
        text: REMOVE,
        values: [arrayLiteral(jobs.map((job) => job.id)), arrayLiteral(jobs.map((job) => job.heldLock))],
      });
      return touched(jobs, rows);
    });
  }

  prepare(): Promise<void> {
    return prepareJobTable(this.pools.api);
  }

  async lockDue(request: LockRequest): Promise<LockedBatch<LockedJob>> {
    const lockedAt = new Date();
    const scan = scanWindow(request);
    const endpoints = [...request.endpointBudgets];
    const clients = [...request.clientBudgets];
    const { rows } = await this.pools.bookkeeping.query<
      JobRow & ForDeliveryRow & { scanned: number; passed_endpoints: string[] | null; passed_clients: string[] | null }
    >({
      name: "wh-lock-due",
      text: LOCK_DUE,
      values: [
        request.limit,
        scan,
        this.options.owner,
        lockedAt,
        new Date(lockedAt.getTime() - this.options.lockLifetimeMs),
        endpoints.map(([endpoint]) => endpoint),
        endpoints.map(([, budget]) => budget),
        request.defaultPerEndpoint,
        clients.map(([clientId]) => clientId),
        clients.map(([, budget]) => budget),
        request.defaultPerClient,
        endpoints.filter(([, budget]) => budget === 0).map(([endpoint]) => endpoint),
        clients.filter(([, budget]) => budget === 0).map(([clientId]) => clientId),
      ],
    });
    const lockedRows = rows.filter((row) => row.id !== null);
    const reads = forDeliveryOfRows(lockedRows);
    const jobs = lockedRows
      .map((row, i) => {
        const job = toJob(row) as LockedJob;
        const read = reads[i];
        return read ? Object.assign(job, { read }) : job;
      })
      // Due first; jobs due together (a fan-out) by id, so that the order never depends on the plan.
      .sort((a, b) => (a.nextRunAt?.getTime() ?? 0) - (b.nextRunAt?.getTime() ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const first = rows.find((row) => row.passed_endpoints !== null);
    return {
      jobs,
      drained: (rows[0]?.scanned ?? 0) < scan,
      passedOver: { endpoints: first?.passed_endpoints ?? [], clients: first?.passed_clients ?? [] },
    };
  }

  async unlock(jobs: readonly LockedJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.pools.bookkeeping.query({
      name: "wh-unlock-jobs",
      text: UNLOCK,
      values: [arrayLiteral(jobs.map((job) => job.id)), arrayLiteral(jobs.map((job) => job.lockedAt))],
    });
  }

  async insert(
    deliveries: readonly NewDelivery[],
    lockFor: (deliveries: readonly NewDelivery[]) => boolean[],
    fanOut?: readonly Subscription[],
  ): Promise<LockedJob[]> {
    if (deliveries.length === 0) return [];
    const check = this.options.checkFanOuts ? checkOf(deliveries, fanOut) : undefined;
    const inserted = await this.#inserts.call({ deliveries, lockFor, ...(check ? { check } : {}) });
    if (inserted instanceof FanOutChangedError) throw inserted;
    return inserted;
  }

  async #insert(calls: Insert[]): Promise<Array<LockedJob[] | FanOutChangedError>> {
    const deliveries = calls.flatMap((call) => call.deliveries);
    const locked = (calls[0] as Insert).lockFor(deliveries);
    const at = new Date();
    const { owner } = this.options;
    const values = insertValues(deliveries, locked, at, owner);
    const changed = new Set<Insert>();
    if (this.options.checkFanOuts) {
      const checked = calls.filter((call): call is Insert & { check: FanOutCheck } => call.check !== undefined);
      const { rows } = await this.pools.api.query<{ n: number }>({
        name: "wh-insert-jobs-checked",
        text: INSERT_CHECKED,
        values: [...values, ...checkValues(checked)],
      });
      for (const { n } of rows) changed.add(checked[n - 1] as Insert);
    } else {
      await this.pools.api.query({ name: "wh-insert-jobs", text: INSERT, values });
    }
    let i = 0;
    return calls.map((call) => {
      const jobs = call.deliveries.flatMap((delivery) => (locked[i++] ? [insertedLocked(delivery, at, owner)] : []));
      return changed.has(call) ? new FanOutChangedError() : jobs;
    });
  }

  async insertOnce(
    clientId: string,
    key: string,
    deliveries: readonly NewDelivery[],
    fanOut?: readonly Subscription[],
  ): Promise<{ ids: string[]; duplicate: boolean }> {
    const check = this.options.checkFanOuts ? checkOf(deliveries, fanOut) : undefined;
    const ids = deliveries.map((delivery) => delivery.notification.id);
    return inTransaction(this.pools.api, async (client) => {
      // The primary key (client_id, key) decides; a concurrent twin waits here for the other's commit.
      const claimed = await client.query(
        "INSERT INTO wh_idempotency_keys (client_id, key, notification_ids, created_at) VALUES ($1, $2, $3, now()) ON CONFLICT DO NOTHING",
        [clientId, key, ids],
      );
      if (claimed.rowCount === 0) {
        const { rows } = await client.query<{ notification_ids: string[] }>(
          "SELECT notification_ids FROM wh_idempotency_keys WHERE client_id = $1 AND key = $2",
          [clientId, key],
        );
        return { ids: rows[0]?.notification_ids ?? [], duplicate: true };
      }
      if (deliveries.length > 0) {
        const values = insertValues(
          deliveries,
          deliveries.map(() => false),
          new Date(),
          null,
        );
        if (check) {
          const { rows } = await client.query(INSERT_CHECKED, [...values, ...checkValues([{ check, deliveries }])]);
          // The key's claim is rolled back with the rest: the publish reads its subscriptions again and retries.
          if (rows.length > 0) throw new FanOutChangedError();
        } else {
          await client.query(INSERT, values);
        }
      }
      return { ids, duplicate: false };
    });
  }

  renew(renewals: readonly LockRenewal[]): Promise<boolean[]> {
    return Promise.all(renewals.map((renewal) => this.#renewals.call(renewal)));
  }

  save(states: readonly JobState[]): Promise<boolean[]> {
    return Promise.all(states.map((state) => this.#saves.call(state)));
  }

  finish(runs: readonly FinishedRun[]): Promise<boolean[]> {
    return Promise.all(runs.map((run) => this.#finishes.call(run)));
  }

  retry(runs: readonly RetriedRun[]): Promise<boolean[]> {
    return Promise.all(runs.map((run) => this.#retries.call(run)));
  }

  async remove(jobs: readonly Held[]): Promise<string[]> {
    const removed = await Promise.all(jobs.map((job) => this.#removes.call(job)));
    return jobs.filter((_, i) => removed[i]).map((job) => job.id);
  }

  async get(id: string): Promise<StoredJob | undefined> {
    const { rows } = await this.pools.bookkeeping.query<JobRow>("SELECT * FROM wh_delivery_jobs WHERE id = $1", [id]);
    return rows[0] && toJob(rows[0]);
  }

  async counts(): Promise<JobCounts> {
    const { rows } = await this.pools.bookkeeping.query<JobCounts>({ name: "wh-count-jobs", text: COUNT_JOBS });
    return rows[0] ?? { due: 0, scheduled: 0, locked: 0, oldestDueAt: null };
  }
}
