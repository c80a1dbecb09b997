import type { JobId, JobParameters } from "agenda";
import type { Pool } from "pg";
import { Coalescer } from "../../coalescer.js";
import type { BulkJobOperations, QueuedInsert } from "../../delivery/job-batching.js";
import type { Notification } from "../../domain/model.js";
import { insertNotifications, insertParameters } from "./notifications.js";
import { isDataError, optional } from "./rows.js";

/** Agenda's jobs table, as @agendajs/postgres-backend creates it. */
const AGENDA_TABLE = "agenda_jobs";

/**
 * Hands notifications to Agenda in one statement: claims those not yet
 * scheduled and inserts one due job each (the rows `agenda.now()` would write
 * a round trip at a time). Claim and insert commit together, so a failure
 * leaves both undone for the sweep, and two sweeps never queue one twice.
 * Returns one of the call's new job ids (for the wake-up), if it queued any.
 */
export function createPostgresDeliveryScheduler(pool: Pool) {
  // Publishes arriving together are scheduled together.
  const schedule = new Coalescer(
    async (calls: Array<{ ids: readonly string[]; jobName: string; lastModifiedBy: string }>) => {
      const { rows } = await pool.query<{ id: string; notification_id: string }>({
        name: "wh-schedule-deliveries",
        text: `WITH claimed AS (
         UPDATE wh_notifications SET scheduled = true WHERE id = ANY($1::text[]) AND NOT scheduled RETURNING id
       ), input AS (
         -- One job per notification, even if two callers in the batch name it.
         SELECT DISTINCT ON (notification_id) * FROM unnest($1::text[], $2::text[], $3::text[]) AS t (notification_id, name, last_modified_by)
       )
       INSERT INTO "${AGENDA_TABLE}" (name, priority, next_run_at, type, data, disabled, fork, last_modified_by)
       SELECT input.name, 0, now(), 'normal', jsonb_build_object('notificationId', claimed.id), false, false, input.last_modified_by
       FROM claimed JOIN input ON input.notification_id = claimed.id
       RETURNING id, data->>'notificationId' AS notification_id`,
        values: [
          calls.flatMap((call) => call.ids),
          calls.flatMap((call) => call.ids.map(() => call.jobName)),
          calls.flatMap((call) => call.ids.map(() => call.lastModifiedBy)),
        ],
      });
      const jobIds = new Map(rows.map((row) => [row.notification_id, String(row.id)]));
      return calls.map((call) => call.ids.map((id) => jobIds.get(id)).find((jobId) => jobId !== undefined));
    },
    { splitOn: isDataError },
  );
  return (notificationIds: readonly string[], jobName: string, lastModifiedBy: string): Promise<string | undefined> =>
    notificationIds.length === 0 ? Promise.resolve(undefined) : schedule.call({ ids: notificationIds, jobName, lastModifiedBy });
}

/**
 * Stores new notifications, already marked scheduled, and inserts one due
 * job each, in one statement: one commit makes them accepted and queued
 * alike, with no claim to update afterwards. Publishes arriving together
 * share the statement. The first `lockUpTo()` jobs of a statement (asked as
 * it goes out) are inserted locked by `lastModifiedBy`, as lockNextJobs
 * would lock them: the scheduler runs them without a round trip to lock them.
 */
export function createPostgresQueuedInsert(pool: Pool) {
  const insert = new Coalescer(
    async (calls: Array<{ notifications: Notification[]; jobName: string; lastModifiedBy: string; lockUpTo: () => number }>) => {
      const notifications = calls.flatMap((call) => call.notifications);
      const lockedAt = new Date();
      const lockCount = Math.max(0, Math.min(notifications.length, calls[0]?.lockUpTo() ?? 0));
      const { rows } = await pool.query<{ id: string; notification_id: string; next_run_at: Date; locked: boolean }>({
        name: "wh-insert-queued",
        text: `WITH inserted AS (${insertNotifications(true)} RETURNING id),
         input AS (
           SELECT * FROM unnest($11::text[], $12::text[], $13::text[]) WITH ORDINALITY AS t (notification_id, name, last_modified_by, position)
         )
       INSERT INTO "${AGENDA_TABLE}" (name, priority, next_run_at, type, data, disabled, fork, last_modified_by, locked_at)
       SELECT input.name, 0, now(), 'normal', jsonb_build_object('notificationId', inserted.id), false, false, input.last_modified_by,
              CASE WHEN input.position <= $14 THEN $15::timestamptz END
       FROM inserted JOIN input ON input.notification_id = inserted.id
       RETURNING id, data->>'notificationId' AS notification_id, next_run_at, locked_at IS NOT NULL AS locked`,
        values: [
          ...insertParameters(notifications),
          notifications.map((n) => n.id),
          calls.flatMap((call) => call.notifications.map(() => call.jobName)),
          calls.flatMap((call) => call.notifications.map(() => call.lastModifiedBy)),
          lockCount,
          lockedAt,
        ],
      });
      const byNotification = new Map(rows.map((row) => [row.notification_id, row]));
      return calls.map((call): QueuedInsert => {
        const mine = call.notifications.flatMap((n) => byNotification.get(n.id) ?? []);
        const jobId = mine[0] && String(mine[0].id);
        const locked = mine
          .filter((row) => row.locked)
          .map(
            (row): JobParameters => ({
              _id: row.id as unknown as JobId,
              name: call.jobName,
              priority: 0,
              nextRunAt: row.next_run_at,
              type: "normal",
              data: { notificationId: row.notification_id },
              disabled: false,
              lockedAt,
              fork: false,
              lastModifiedBy: call.lastModifiedBy,
            }),
          );
        return { ...(jobId ? { jobId } : {}), locked };
      });
    },
    { splitOn: isDataError },
  );
  return (
    notifications: Notification[],
    jobName: string,
    lastModifiedBy: string,
    lockUpTo: () => number = () => 0,
  ): Promise<QueuedInsert> =>
    notifications.length === 0 ? Promise.resolve({ locked: [] }) : insert.call({ notifications, jobName, lastModifiedBy, lockUpTo });
}

interface JobRow {
  id: string;
  name: string;
  priority: number;
  next_run_at: Date | null;
  type: "normal" | "single";
  locked_at: Date | null;
  last_finished_at: Date | null;
  failed_at: Date | null;
  fail_count: number | null;
  fail_reason: string | null;
  repeat_timezone: string | null;
  last_run_at: Date | null;
  repeat_interval: string | null;
  data: unknown;
  repeat_at: string | null;
  disabled: boolean;
  progress: number | null;
  fork: boolean | null;
  last_modified_by: string | null;
  debounce_started_at: Date | null;
  start_date: Date | null;
  end_date: Date | null;
  skip_days: number[] | null;
}

/** A row as the backend's own repository reads it. */
const toJob = (row: JobRow): JobParameters => ({
  _id: row.id as unknown as JobId,
  name: row.name,
  priority: row.priority,
  nextRunAt: row.next_run_at,
  type: row.type,
  data: row.data,
  disabled: row.disabled,
  ...optional("lockedAt", row.locked_at),
  ...optional("lastFinishedAt", row.last_finished_at),
  ...optional("failedAt", row.failed_at),
  ...optional("failCount", row.fail_count),
  ...optional("failReason", row.fail_reason),
  ...optional("repeatTimezone", row.repeat_timezone),
  ...optional("lastRunAt", row.last_run_at),
  ...optional("repeatInterval", row.repeat_interval),
  ...optional("repeatAt", row.repeat_at),
  ...optional("progress", row.progress),
  ...optional("fork", row.fork),
  ...optional("lastModifiedBy", row.last_modified_by),
  ...optional("debounceStartedAt", row.debounce_started_at),
  ...optional("startDate", row.start_date),
  ...optional("endDate", row.end_date),
  ...optional("skipDays", row.skip_days),
});

/**
 * The backend's getNextJobToRun for up to `$5` jobs: due and unlocked, or
 * locked before `$3` (the holder is presumed dead), oldest first. The two
 * kinds are looked up apart: as one OR the planner reads every due job and
 * sorts them (a backlog of 20 000 cost 14 ms per lock, against 0.2 ms for an
 * index scan that stops after `$5`), and without table statistics (no
 * autovacuum) it chooses that plan for any backlog. `id = ANY(ARRAY(…))`
 * keeps the outer update on the primary key; `IN (…)` became a hash join
 * over the whole table once statistics existed. Rows a branch locks and the
 * final LIMIT leaves out are released as the statement ends. Expired locks
 * are looked up oldest lock first on the (nearly empty) locked_at index, by
 * a lookup that names no other column, so that no plan can take another
 * index: with the job's name and an order, the one generic plan (see
 * STABLE_PLANS) walked every waiting job of the name in the find-and-lock
 * index, 2.6 ms per lock with 100 000 waiting and growing with the backlog,
 * against 0.002 ms. (It looks at the oldest `$5` expired locks of any job
 * name; this service has one.)
 */
export const LOCK_NEXT_JOBS = `
  WITH due AS (
    SELECT id, next_run_at, priority FROM "${AGENDA_TABLE}"
    -- Due by our clock or the database's: jobs are inserted with the database's now().
    WHERE name = $1 AND disabled = FALSE AND locked_at IS NULL AND next_run_at <= GREATEST($2::timestamptz, now())
    ORDER BY next_run_at ASC NULLS LAST, priority DESC
    LIMIT $5
    FOR UPDATE SKIP LOCKED
  ), expired AS (
    SELECT id, next_run_at, priority FROM "${AGENDA_TABLE}"
    WHERE id = ANY(ARRAY(SELECT id FROM "${AGENDA_TABLE}" WHERE locked_at <= $3 ORDER BY locked_at LIMIT $5))
      AND name = $1 AND disabled = FALSE AND locked_at <= $3
    FOR UPDATE SKIP LOCKED
  )
  UPDATE "${AGENDA_TABLE}" SET locked_at = $6, last_modified_by = $4
  WHERE id = ANY(ARRAY(
    SELECT id FROM (SELECT * FROM due UNION ALL SELECT * FROM expired) AS found
    ORDER BY next_run_at ASC NULLS LAST, priority DESC
    LIMIT $5
  ))
  RETURNING *`;

/**
 * The backend's getNextJobToRun and saveJobState, each for many jobs in one
 * statement, with the same conditions and columns.
 */
export function createPostgresBulkJobOperations(pool: Pool): BulkJobOperations {
  return {
    async lockNextJobs(jobName, dueBy, lockDeadline, limit, lastModifiedBy) {
      const { rows } = await pool.query<JobRow>({
        name: "wh-lock-next-jobs",
        text: LOCK_NEXT_JOBS,
        values: [jobName, dueBy, lockDeadline, lastModifiedBy ?? null, limit, new Date()],
      });
      return rows
        .sort((a, b) => (a.next_run_at?.getTime() ?? Infinity) - (b.next_run_at?.getTime() ?? Infinity) || b.priority - a.priority)
        .map(toJob);
    },

    async unlockIfHeld(jobs) {
      await pool.query({
        name: "wh-unlock-if-held",
        text: `UPDATE "${AGENDA_TABLE}" AS j SET locked_at = NULL
               FROM unnest($1::uuid[], $2::timestamptz[]) AS t (id, locked_at)
               WHERE j.id = t.id AND j.locked_at = t.locked_at`,
        values: [jobs.map((job) => job.id), jobs.map((job) => job.lockedAt)],
      });
    },

    async saveJobStates(saves) {
      const column = <T>(pick: (job: JobParameters) => T) => saves.map((save) => pick(save.job));
      const { rows } = await pool.query<{ id: string }>({
        name: "wh-save-job-states",
        text: `UPDATE "${AGENDA_TABLE}" AS j
         SET locked_at = t.locked_at, next_run_at = t.next_run_at, last_run_at = t.last_run_at, progress = t.progress,
             fail_reason = t.fail_reason, fail_count = t.fail_count, failed_at = t.failed_at,
             last_finished_at = t.last_finished_at, last_modified_by = t.last_modified_by
         FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[], $6::real[], $7::text[],
                     $8::int[], $9::timestamptz[], $10::timestamptz[], $11::text[])
           AS t (id, name, locked_at, next_run_at, last_run_at, progress, fail_reason, fail_count, failed_at, last_finished_at,
                 last_modified_by)
         WHERE j.id = t.id AND j.name = t.name
         RETURNING j.id`,
        values: [
          column((job) => String(job._id)),
          column((job) => job.name),
          column((job) => job.lockedAt ?? null),
          column((job) => job.nextRunAt ?? null),
          column((job) => job.lastRunAt ?? null),
          column((job) => job.progress ?? null),
          column((job) => job.failReason ?? null),
          column((job) => job.failCount ?? null),
          column((job) => job.failedAt ?? null),
          column((job) => job.lastFinishedAt ?? null),
          saves.map((save) => save.lastModifiedBy ?? null),
        ],
      });
      const saved = new Set(rows.map((row) => String(row.id)));
      return saves.map((save) => saved.has(String(save.job._id)));
    },

    async removeJobs(ids) {
      const { rows } = await pool.query<{ id: string }>({
        name: "wh-remove-jobs",
        text: `DELETE FROM "${AGENDA_TABLE}" WHERE id = ANY($1::uuid[]) RETURNING id`,
        values: [ids],
      });
      return rows.map((row) => String(row.id));
    },
  };
}
