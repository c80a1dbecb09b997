import { Coalescer } from "../../coalescer.js";
import type { LockRequest } from "../../delivery/fairness/budgets.js";
import { scanWindow, withoutBudget } from "../../delivery/fairness/budgets.js";
import type {
  FinishedRun,
  HeldJob,
  JobCounts,
  JobStore,
  KeyedDeliveries,
  LockedBatch,
  LockedJob,
  NewDelivery,
  RetriedRun,
} from "../../delivery/job-store.js";
import type { AcceptedPublish } from "../../domain/ports.js";
import { claimKeys } from "./idempotency-keys.js";
import { prepareJobTable } from "./job-schema.js";
import {
  CLAIM_SEND,
  COUNT_JOBS,
  FINISH,
  INSERT,
  insertParameters,
  LOCK_DUE,
  REMOVE,
  RENEW,
  RESCHEDULE,
  RETRY,
  recordParameters,
  TAKE_SLOT,
  WAIT_FOR_SLOT,
} from "./job-statements.js";
import { type ForDeliveryRow, forDeliveryOfRows } from "./notifications.js";
import { isDataError } from "./rows.js";
import type { SqlPool } from "./sql-pool.js";
import { inTransaction } from "./transaction.js";

const idsOf = (deliveries: readonly NewDelivery[]) => deliveries.map((delivery) => delivery.notification.id);

type LockRow = ForDeliveryRow & {
  scanned: number;
  passed_endpoints: string[] | null;
  passed_clients: string[] | null;
  id: string | null;
  endpoint: string;
  client_id: string;
  next_run_at: Date;
  trace_context: string | null;
  throttle_slot_at: Date | null;
};

/**
 * Which of `jobs` a statement wrote, from the id and held lock of each row
 * it answers: two runs of one job under different locks can share a
 * statement, and only the one holding the lock wrote.
 */
function written(jobs: readonly HeldJob[], rows: ReadonlyArray<{ id: string; held_lock: Date }>): boolean[] {
  const done = new Set(rows.map((row) => `${row.id} ${row.held_lock.getTime()}`));
  return jobs.map((job) => done.has(`${job.id} ${job.heldLock.getTime()}`));
}

/**
 * Delivery jobs in PostgreSQL (or embedded PGlite), in `wh_delivery_jobs`
 * next to the notifications. Accepting goes through `api` (its commit waits
 * for the disk: an accepted notification is durable before the answer); the
 * jobs' own bookkeeping through `bookkeeping` (see open-store.ts). The
 * statements every notification makes (insert, finish, retry) are shared by
 * the calls arriving together (coalescer.ts).
 */
export class PostgresJobStore implements JobStore {
  readonly #inserts: Coalescer<readonly NewDelivery[], undefined>;
  readonly #finishes: Coalescer<FinishedRun, boolean>;
  readonly #retries: Coalescer<RetriedRun, boolean>;
  /**
   * Whose rows in the statistics this instance's accepting and its attempts
   * add to (store/postgres/delivery-stats.ts): apart, so that an insert
   * waiting for the disk never holds up the attempts' rows.
   */
  readonly #acceptsWriter: string;
  readonly #attemptsWriter: string;

  constructor(
    private readonly pools: { api: SqlPool; bookkeeping: SqlPool },
    private readonly options: {
      /** This instance's name: the holder of the locks it takes. */
      owner: string;
      /** A lock older than this is presumed dead, and its job taken by whoever asks. */
      lockLifetimeMs: number;
    },
  ) {
    this.#acceptsWriter = `${options.owner} accepts`;
    this.#attemptsWriter = `${options.owner} attempts`;
    this.#inserts = new Coalescer(
      async (calls) => {
        await pools.api.query({
          name: "wh-insert-jobs",
          text: INSERT,
          values: insertParameters(calls.flat(), options.owner, this.#acceptsWriter),
        });
        return calls.map(() => undefined);
      },
      { splitOn: isDataError },
    );
    this.#finishes = new Coalescer(
      async (runs) => {
        const { rows } = await pools.bookkeeping.query<{ id: string; held_lock: Date }>({
          name: "wh-finish-jobs",
          text: FINISH,
          values: [...recordParameters(runs), runs.map((run) => run.heldLock), this.#attemptsWriter],
        });
        return written(runs, rows);
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
            runs.map((run) => run.heldLock),
            runs.map((run) => run.nextRunAt),
            this.#attemptsWriter,
          ],
        });
        return written(runs, rows);
      },
      { splitOn: isDataError },
    );
  }

  prepare(): Promise<void> {
    return prepareJobTable(this.pools.api);
  }

  async insert(deliveries: readonly NewDelivery[]): Promise<void> {
    if (deliveries.length > 0) await this.#inserts.call(deliveries);
  }

  insertBatch(items: readonly KeyedDeliveries[]): Promise<AcceptedPublish[]> {
    return inTransaction(this.pools.api, async (client) => {
      const keyed = items.flatMap((item, index) =>
        item.key === undefined ? [] : [{ index, clientId: item.clientId, key: item.key, ids: idsOf(item.deliveries) }],
      );
      const claimed = keyed.length > 0 ? await claimKeys(client, keyed) : new Map<number, string[]>();
      const earlier = new Map([...claimed].map(([claim, ids]) => [(keyed[claim] as { index: number }).index, ids]));
      const stored = items.flatMap((item, index) => (earlier.has(index) ? [] : item.deliveries));
      if (stored.length > 0) await client.query(INSERT, insertParameters(stored, this.options.owner, this.#acceptsWriter));
      return items.map((item, index) => {
        const ids = earlier.get(index);
        return ids ? { ids, duplicate: true } : { ids: idsOf(item.deliveries), duplicate: false };
      });
    });
  }

  async lockDue(request: LockRequest): Promise<LockedBatch> {
    const lockedAt = new Date();
    const scan = scanWindow(request);
    const endpoints = [...request.endpointBudgets];
    const clients = [...request.clientBudgets];
    const { rows } = await this.pools.bookkeeping.query<LockRow>({
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
        withoutBudget(request.endpointBudgets),
        withoutBudget(request.clientBudgets),
      ],
    });
    const lockedRows = rows.filter((row): row is LockRow & { id: string } => row.id !== null);
    const reads = forDeliveryOfRows(lockedRows);
    const jobs = lockedRows
      .map((row, i) => {
        const read = reads[i];
        const job: LockedJob = {
          id: row.id,
          endpoint: row.endpoint,
          clientId: row.client_id,
          lockedAt,
          ...(row.trace_context ? { traceContext: row.trace_context } : {}),
          ...(row.throttle_slot_at ? { throttleSlotAt: row.throttle_slot_at } : {}),
          ...(read ? { read } : {}),
        };
        return { job, dueAt: row.next_run_at.getTime() };
      })
      // Due first; jobs due together (a fan-out) by id, so that the order never depends on the plan.
      .sort((a, b) => a.dueAt - b.dueAt || (a.job.id < b.job.id ? -1 : a.job.id > b.job.id ? 1 : 0))
      .map(({ job }) => job);
    const first = rows.find((row) => row.passed_endpoints !== null);
    return {
      jobs,
      // A lock that took its limit may have left more behind, whatever it read.
      drained: (rows[0]?.scanned ?? 0) < scan && jobs.length < request.limit,
      passedOver: { endpoints: first?.passed_endpoints ?? [], clients: first?.passed_clients ?? [] },
    };
  }

  async unlock(jobs: readonly HeldJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.pools.bookkeeping.query({
      name: "wh-unlock-jobs",
      text: RESCHEDULE,
      values: [jobs.map((job) => job.id), jobs.map((job) => job.heldLock), jobs.map(() => null)],
    });
  }

  async renew(job: HeldJob, lockedAt: Date): Promise<boolean> {
    const { rows } = await this.pools.bookkeeping.query(RENEW, [[job.id], [job.heldLock], [lockedAt]]);
    return rows.length === 1;
  }

  finish(run: FinishedRun): Promise<boolean> {
    return this.#finishes.call(run);
  }

  retry(run: RetriedRun): Promise<boolean> {
    return this.#retries.call(run);
  }

  async reschedule(job: HeldJob, nextRunAt: Date): Promise<boolean> {
    const { rows } = await this.pools.bookkeeping.query(RESCHEDULE, [[job.id], [job.heldLock], [nextRunAt]]);
    return rows.length === 1;
  }

  async takeSlot(subscriptionId: string, now: Date, intervalMs: number): Promise<Date> {
    const { rows } = await this.pools.bookkeeping.query<{ slot: Date }>({
      name: "wh-take-slot",
      text: TAKE_SLOT,
      values: [subscriptionId, now, intervalMs],
    });
    const slot = rows[0]?.slot;
    if (!slot) throw new Error(`no throttle slot for subscription ${subscriptionId}`);
    return slot;
  }

  async claimSend(subscriptionId: string, now: Date, intervalMs: number): Promise<Date | undefined> {
    const { rows } = await this.pools.bookkeeping.query<{ sent: boolean; send_at: Date | null }>({
      name: "wh-claim-send",
      text: CLAIM_SEND,
      values: [subscriptionId, now, intervalMs],
    });
    const row = rows[0];
    return row?.sent ? undefined : (row?.send_at ?? now);
  }

  async waitForSlot(job: HeldJob, slot: Date): Promise<boolean> {
    const { rows } = await this.pools.bookkeeping.query(WAIT_FOR_SLOT, [[job.id], [job.heldLock], [slot]]);
    return rows.length === 1;
  }

  async remove(job: HeldJob): Promise<boolean> {
    const { rows } = await this.pools.bookkeeping.query(REMOVE, [[job.id], [job.heldLock]]);
    return rows.length === 1;
  }

  async counts(): Promise<JobCounts> {
    const { rows } = await this.pools.bookkeeping.query<JobCounts>({ name: "wh-count-jobs", text: COUNT_JOBS });
    return rows[0] ?? { due: 0, scheduled: 0, locked: 0, oldestDueAt: null };
  }
}
