import type { DeliveryAttempt, Notification, NotificationStatus } from "../../domain/model.js";
import { countAccepted, countAttempts } from "./delivery-stats.js";
import { forDeliveryColumns } from "./notifications.js";

/**
 * The job table's statements. A job is one pending notification's next
 * attempt (its id is the notification's), in `wh_delivery_jobs` (made by a
 * migration, schema.ts), inserted with its notification and deleted once
 * the notification is delivered or has failed for good.
 */

/**
 * Locks due jobs ($1 limit, $2 scan window) for $3 (owner) at $4 (lock
 * time), oldest due first, and jobs whose lock is older than $5 (their
 * holder is presumed dead). It applies the lock budgets of
 * delivery/fairness/budgets.ts (`withinBudgets`, the rule's one definition,
 * held to the same answers by test/store/lock-budgets.test.ts): each
 * endpoint gets at most its budget (the arrays $6/$7, else $8), then each
 * client at most its own ($9/$10, else $11) among what its endpoints'
 * budgets let through, in due order (ties by id). Endpoints and clients with
 * a budget of 0 are left out ($12, $13). Due rows and expired locks are
 * looked up apart, each on its own index: as one OR, the planner reads and
 * sorts every due row.
 *
 * The scans read without locking: only the rows chosen are locked, skipping
 * those another instance is locking at the same moment, and checked again
 * (still due and unlocked, or still expired) once locked, so that two
 * instances never take one job.
 *
 * Rows read by id (the jobs picked, their notifications and subscriptions)
 * are found by `id = ANY (ARRAY(…))`, an index condition whatever the
 * statistics, rather than by a join: a plan made while a table was empty
 * (a new database, the queue drained) reads the whole table once per row.
 *
 * Each locked row comes with what its attempt reads (its notification and
 * subscription), so that the attempt need not read it again; and the first
 * row with how many due rows the window read (a full window: more may be
 * due) and which endpoints and clients had due rows their budget passed over.
 */
export const LOCK_DUE = `
  WITH due AS (
    SELECT id, endpoint, client_id, next_run_at FROM wh_delivery_jobs
    WHERE locked_at IS NULL AND next_run_at <= GREATEST($4::timestamptz, now())
      AND endpoint <> ALL($12::text[]) AND client_id <> ALL($13::text[])
    ORDER BY next_run_at, id
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
         locked.id, locked.endpoint, locked.client_id, locked.next_run_at, locked.trace_context, locked.throttle_slot_at,
         ${forDeliveryColumns("row_number() OVER (PARTITION BY s.id ORDER BY locked.id) = 1")}
  FROM (SELECT 1) AS one LEFT JOIN locked ON true
    LEFT JOIN read_notifications n ON n.id = locked.id LEFT JOIN read_subscriptions s ON s.id = n.subscription_id`;

/**
 * Notifications ($1…$10, insertParameters) and their jobs, due now, in one
 * statement: their endpoints $11, trace contexts $12, and locks $13 (null:
 * unlocked) held by $14; counted in the statistics as writer $15. (`scheduled` is
 * always true now; an older version used false for a notification not yet
 * queued, and `prepareJobTable` takes those over.)
 */
export const INSERT = `
  WITH inserted AS (
    INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, redelivery_of, scheduled, created_at, updated_at)
    SELECT id, subscription_id, client_id, event, body, status, attempt_count, redelivery_of, true, created_at, updated_at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::timestamptz[], $10::timestamptz[])
      AS t (id, subscription_id, client_id, event, body, status, attempt_count, redelivery_of, created_at, updated_at)
    RETURNING id, client_id
  ), ${countAccepted("$15")}
  INSERT INTO wh_delivery_jobs (id, endpoint, client_id, next_run_at, trace_context, locked_at, locked_by)
  SELECT i.id, input.endpoint, i.client_id, now(), input.trace_context, input.locked_at, CASE WHEN input.locked_at IS NOT NULL THEN $14 END
  FROM inserted i JOIN unnest($1::text[], $11::text[], $12::text[], $13::timestamptz[]) AS input (id, endpoint, trace_context, locked_at)
    ON input.id = i.id`;

/** INSERT's parameters. */
export function insertParameters(
  deliveries: ReadonlyArray<{ notification: Notification; endpoint: string; traceContext?: string; lockedAt?: Date }>,
  owner: string,
  statsWriter: string,
): unknown[] {
  const column = <T>(pick: (notification: Notification) => T) => deliveries.map((delivery) => pick(delivery.notification));
  return [
    column((n) => n.id),
    column((n) => n.subscriptionId),
    column((n) => n.clientId),
    column((n) => n.event),
    column((n) => n.body),
    column((n) => n.status),
    column((n) => n.attemptCount),
    column((n) => n.redeliveryOf ?? null),
    column((n) => n.createdAt),
    column((n) => n.updatedAt),
    deliveries.map((delivery) => delivery.endpoint),
    deliveries.map((delivery) => delivery.traceContext ?? null),
    deliveries.map((delivery) => delivery.lockedAt ?? null),
    owner,
    statsWriter,
  ];
}

/**
 * Where a job named by id (t.id) still has the lock its caller holds
 * (t.held_lock). It finds each row through the primary key (`id = ANY`) and
 * compares the lock with IS NOT DISTINCT FROM, which no index serves: with a
 * plain `=` the planner may read the locked-jobs index instead, which holds
 * an entry for every job locked since the last vacuum.
 */
const STILL_HELD = "j.id = ANY($1::text[]) AND j.id = t.id AND t.held_lock IS NOT NULL AND j.locked_at IS NOT DISTINCT FROM t.held_lock";

/**
 * Attempts ($1…$9, recordParameters; $1 holds the notification ids, which
 * are the job ids) recorded, each notification moved to its status; the
 * CTEs `input`, `attempts`, `recorded`, for FINISH and RETRY to end. A final
 * status stays: an attempt in flight when its subscription was deleted
 * records its outcome without reopening the notification.
 */
const RECORD_ATTEMPTS = `
  WITH input AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[], $8::bool[], $9::text[])
      AS t (notification_id, attempt, started_at, duration_ms, status_code, response_body, error, succeeded, status)
  ), attempts AS (
    INSERT INTO wh_delivery_attempts (notification_id, attempt, started_at, duration_ms, status_code, response_body, error, succeeded)
    SELECT notification_id, attempt, started_at, duration_ms, status_code, response_body, error, succeeded FROM input
  ), recorded AS (
    UPDATE wh_notifications n
    SET status = CASE WHEN n.status = 'pending' THEN input.status ELSE n.status END,
        attempt_count = GREATEST(n.attempt_count, input.attempt + 1), updated_at = now()
    FROM input WHERE n.id = ANY ($1::text[]) AND n.id = input.notification_id
    RETURNING n.id
  )`;

/** RECORD_ATTEMPTS' parameters. */
export function recordParameters(records: ReadonlyArray<{ attempt: DeliveryAttempt; status: NotificationStatus }>): unknown[] {
  const column = <T>(pick: (attempt: DeliveryAttempt) => T) => records.map((record) => pick(record.attempt));
  return [
    column((a) => a.notificationId),
    column((a) => a.attempt),
    column((a) => a.startedAt),
    column((a) => a.durationMs),
    column((a) => a.statusCode ?? null),
    // PostgreSQL text can't hold NUL.
    column((a) => a.responseBody?.replaceAll("\u0000", "\uFFFD") ?? null),
    column((a) => a.error ?? null),
    column((a) => a.succeeded),
    records.map((record) => record.status),
  ];
}

/**
 * Final attempts recorded and counted in the statistics as writer $11, and
 * their jobs deleted where still held ($10), in one statement: one round
 * trip and one commit.
 */
export const FINISH = `
  ${RECORD_ATTEMPTS}, ${countAttempts("$11")}, removed AS (
    DELETE FROM wh_delivery_jobs AS j USING unnest($1::text[], $10::timestamptz[]) AS t (id, held_lock)
    WHERE ${STILL_HELD}
    RETURNING j.id, t.held_lock
  )
  SELECT id, held_lock FROM removed`;

/** Failed attempts recorded and counted (writer $12), and their retries scheduled, due at $11, where still held ($10), as FINISH. */
export const RETRY = `
  ${RECORD_ATTEMPTS}, ${countAttempts("$12")}, saved AS (
    UPDATE wh_delivery_jobs AS j SET next_run_at = t.next_run_at, locked_at = NULL, locked_by = NULL, throttle_slot_at = NULL
    FROM unnest($1::text[], $10::timestamptz[], $11::timestamptz[]) AS t (id, held_lock, next_run_at)
    WHERE ${STILL_HELD}
    RETURNING j.id, t.held_lock
  )
  SELECT id, held_lock FROM saved`;

/** Locks released where still held ($2), each job due at $3, or as scheduled where $3 is null. */
export const RESCHEDULE = `
  UPDATE wh_delivery_jobs AS j
  SET locked_at = NULL, locked_by = NULL, next_run_at = COALESCE(t.next_run_at, j.next_run_at, now())
  FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS t (id, held_lock, next_run_at)
  WHERE ${STILL_HELD}
  RETURNING j.id`;

/** A lock released where still held ($2), the job due at its throttle slot $3, which it keeps (fairness/throttle.ts). */
export const WAIT_FOR_SLOT = `
  UPDATE wh_delivery_jobs AS j SET locked_at = NULL, locked_by = NULL, next_run_at = t.slot, throttle_slot_at = t.slot
  FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS t (id, held_lock, slot)
  WHERE ${STILL_HELD}
  RETURNING j.id`;

/**
 * The next slot of subscription $1 handed to a waiting job, taken: the
 * later of its next free slot and $2 (now); the one after it is $3
 * milliseconds later. Every instance takes slots here, one row per
 * throttled subscription.
 */
export const TAKE_SLOT = `
  INSERT INTO wh_throttle_slots AS s (subscription_id, next_at) VALUES ($1, $2::timestamptz + make_interval(secs => $3::float8 / 1000))
  ON CONFLICT (subscription_id) DO UPDATE
    SET next_at = GREATEST(s.next_at, $2::timestamptz) + make_interval(secs => $3::float8 / 1000)
  RETURNING next_at - make_interval(secs => $3::float8 / 1000) AS slot`;

/**
 * A request of subscription $1 let out at $2 (now) if the one before it
 * went out at least $3 milliseconds earlier: then `sent`, and the next may
 * go $3 ms from now; else the earliest it may go (`send_at`).
 */
export const CLAIM_SEND = `
  WITH claimed AS (
    INSERT INTO wh_throttle_slots AS s (subscription_id, next_at, send_at)
    VALUES ($1, $2::timestamptz, $2::timestamptz + make_interval(secs => $3::float8 / 1000))
    ON CONFLICT (subscription_id) DO UPDATE
      SET send_at = GREATEST(s.send_at, $2::timestamptz) + make_interval(secs => $3::float8 / 1000)
      WHERE s.send_at IS NULL OR s.send_at <= $2::timestamptz
    RETURNING true AS sent
  )
  SELECT COALESCE((SELECT sent FROM claimed), false) AS sent,
         (SELECT send_at FROM wh_throttle_slots WHERE subscription_id = $1) AS send_at`;

/** A lock moved forward ($3) where still held ($2). */
export const RENEW = `
  UPDATE wh_delivery_jobs AS j SET locked_at = t.locked_at
  FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS t (id, held_lock, locked_at)
  WHERE ${STILL_HELD}
  RETURNING j.id`;

/** Jobs deleted where still held ($2). */
export const REMOVE = `
  DELETE FROM wh_delivery_jobs AS j USING unnest($1::text[], $2::timestamptz[]) AS t (id, held_lock)
  WHERE ${STILL_HELD}
  RETURNING j.id`;

/** The queue's counts, each on its own partial index: one FILTERed count over the table would read every row. */
export const COUNT_JOBS = `
  SELECT (SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NULL AND next_run_at <= now())::int AS due,
         (SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NULL AND next_run_at > now())::int AS scheduled,
         (SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NOT NULL)::int AS locked,
         (SELECT min(next_run_at) FROM wh_delivery_jobs WHERE locked_at IS NULL AND next_run_at <= now()) AS "oldestDueAt"`;
