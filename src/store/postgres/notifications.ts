import type { DeliveryRead } from "../../delivery/job-store.js";
import type { DeliveryAttempt, Notification, NotificationStatus, Subscription } from "../../domain/model.js";
import type { NotificationQuery, NotificationStore } from "../../domain/ports.js";
import { optional } from "./rows.js";
import type { SqlPool } from "./sql-pool.js";
import { SUBSCRIPTION_COLUMNS, type SubscriptionRow, toSubscription } from "./subscriptions.js";

interface NotificationRow {
  id: string;
  subscription_id: string;
  client_id: string;
  event: string;
  body: string;
  status: NotificationStatus;
  attempt_count: number;
  redelivery_of: string | null;
  created_at: Date;
  updated_at: Date;
}

interface AttemptRow {
  notification_id: string;
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  response_body: string | null;
  error: string | null;
  succeeded: boolean;
}

const toNotification = (row: NotificationRow): Notification => ({
  id: row.id,
  subscriptionId: row.subscription_id,
  clientId: row.client_id,
  event: row.event,
  body: row.body,
  status: row.status,
  attemptCount: row.attempt_count,
  ...optional("redeliveryOf", row.redelivery_of),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const toAttempt = (row: AttemptRow): DeliveryAttempt => ({
  notificationId: row.notification_id,
  attempt: row.attempt,
  startedAt: row.started_at,
  durationMs: row.duration_ms,
  ...optional("statusCode", row.status_code),
  ...optional("responseBody", row.response_body),
  ...optional("error", row.error),
  succeeded: row.succeeded,
});

const NOTIFICATION_COLUMNS = [
  "id",
  "subscription_id",
  "client_id",
  "event",
  "body",
  "status",
  "attempt_count",
  "redelivery_of",
  "created_at",
  "updated_at",
] as const satisfies readonly (keyof NotificationRow)[];

/**
 * What attempts read (their notification `n` and subscription `s`), as
 * columns prefixed `n_` and `s_`, for a statement that joins the two and
 * returns many rows: the lock statement that hands jobs out with what their
 * attempts read. A subscription's columns (its keys alone are about 3 KB)
 * come only on the row where `firstOfSubscription`, an SQL condition, is
 * true, once per subscription; its other rows carry `s_id` alone (see
 * forDeliveryOfRows).
 */
export function forDeliveryColumns(firstOfSubscription: string): string {
  return [
    ...NOTIFICATION_COLUMNS.map((column) => `n.${column} AS n_${column}`),
    "s.id AS s_id",
    `COALESCE(${firstOfSubscription}, false) AS s_first`,
    ...SUBSCRIPTION_COLUMNS.filter((column) => column !== "id").map(
      (column) => `CASE WHEN ${firstOfSubscription} THEN s.${column} END AS s_${column}`,
    ),
  ].join(", ");
}

export type ForDeliveryRow = { [K in keyof NotificationRow as `n_${K}`]: NotificationRow[K] | null } & {
  [K in keyof SubscriptionRow as `s_${K}`]: SubscriptionRow[K] | null;
} & { s_first: boolean };

/**
 * The reads in rows of forDeliveryColumns, in their order; undefined where
 * the join found no notification. Rows of one subscription share one
 * Subscription, read from the row that carries its columns.
 */
export function forDeliveryOfRows(rows: readonly ForDeliveryRow[]): (DeliveryRead | undefined)[] {
  const subscriptions = new Map<string, Subscription>();
  for (const row of rows) {
    if (row.s_first && row.s_id !== null)
      subscriptions.set(row.s_id, toSubscription(unprefixed<SubscriptionRow>(row, "s_", SUBSCRIPTION_COLUMNS)));
  }
  return rows.map((row) => {
    if (row.n_id === null) return undefined;
    const notification = toNotification(unprefixed<NotificationRow>(row, "n_", NOTIFICATION_COLUMNS));
    const subscription = row.s_id === null ? undefined : subscriptions.get(row.s_id);
    return subscription ? { notification, subscription } : { notification };
  });
}

/** The `columns` of `row` read from their prefixed names. */
function unprefixed<T>(row: object, prefix: string, columns: readonly string[]): T {
  const values = row as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const column of columns) out[column] = values[prefix + column];
  return out as T;
}

/**
 * Ends a statement whose CTE `doomed` (id) names notifications: deletes
 * them and their attempts (here, not by the foreign key's cascade, to be
 * counted), found by `= ANY (ARRAY(…))`, and answers how many of each.
 */
export const DELETE_DOOMED = `attempts AS (
    DELETE FROM wh_delivery_attempts WHERE notification_id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING 1
  ), notifications AS (
    DELETE FROM wh_notifications WHERE id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING 1
  )
  SELECT (SELECT count(*) FROM notifications)::int AS notifications, (SELECT count(*) FROM attempts)::int AS attempts`;

/**
 * Up to $3 ended notifications created before $1 less their client's
 * retention (its own, else $2 ms), deleted with their attempts; how many of
 * each. Each client's oldest come first, read on its (client_id,
 * created_at) index. A notification has ended when it is not pending and
 * has no job: a deleted subscription's notifications are failed while their
 * jobs run out. Rows another instance's purge is deleting at the same
 * moment are skipped, never waited for, and an ended notification never
 * gets a job again, so nothing pending is deleted. The attempts are deleted
 * here, not by the foreign key's cascade, to be counted. Rows are looked
 * up by `id = ANY (ARRAY(…))`, an index condition whatever the statistics
 * (see job-statements.ts): a join planned while a table was empty reads the
 * whole table for each row, which on the attempts table at retention's
 * steady state is seconds per batch.
 */
const PURGE_ENDED = `
  WITH candidates AS (
    SELECT n.id FROM wh_clients c CROSS JOIN LATERAL (
      SELECT n.id FROM wh_notifications n
      WHERE n.client_id = c.id
        AND n.created_at < $1::timestamptz - make_interval(secs => COALESCE(c.retention_ms, $2::bigint) / 1000.0)
        AND n.status <> 'pending'
      ORDER BY n.created_at, n.id
      LIMIT $3
    ) n
    LIMIT $3
  ), doomed AS (
    SELECT n.id FROM wh_notifications n
    WHERE n.id = ANY (ARRAY(SELECT id FROM candidates))
      AND n.id <> ALL (ARRAY(SELECT j.id FROM wh_delivery_jobs j WHERE j.id = ANY (ARRAY(SELECT id FROM candidates))))
    FOR UPDATE OF n SKIP LOCKED
  ), ${DELETE_DOOMED}`;

/**
 * Up to $4 idempotency keys stored before $1 less their lifetime: $3 ms or
 * their client's retention (its own, else $2 ms), whichever is shorter;
 * each client's oldest first, on its (client_id, created_at) index, rows
 * another purge is deleting skipped. Deleted by `ctid = ANY (ARRAY(…))`, a
 * TID scan whatever the statistics (keys are never updated, and the rows
 * are locked from the moment they are found, so a ctid stays theirs).
 */
const PURGE_EXPIRED_KEYS = `
  WITH doomed AS (
    SELECT k.ctid AS tid FROM wh_clients c CROSS JOIN LATERAL (
      SELECT k.ctid FROM wh_idempotency_keys k
      WHERE k.client_id = c.id
        AND k.created_at < $1::timestamptz - make_interval(secs => LEAST(COALESCE(c.retention_ms, $2::bigint), $3::bigint) / 1000.0)
      ORDER BY k.created_at
      LIMIT $4
      FOR UPDATE OF k SKIP LOCKED
    ) k
    LIMIT $4
  ), deleted AS (
    DELETE FROM wh_idempotency_keys WHERE ctid = ANY (ARRAY(SELECT tid FROM doomed)) RETURNING 1
  )
  SELECT count(*)::int AS deleted FROM deleted`;

/** The oldest notification's creation, each client's first entry on the same index. */
const OLDEST_CREATED = `
  SELECT min(first.created_at) AS oldest FROM wh_clients c
  CROSS JOIN LATERAL (SELECT created_at FROM wh_notifications n WHERE n.client_id = c.id ORDER BY created_at LIMIT 1) first`;

export class PostgresNotificationStore implements NotificationStore {
  constructor(private readonly pool: SqlPool) {}

  async get(id: string): Promise<Notification | undefined> {
    const { rows } = await this.pool.query<NotificationRow>("SELECT * FROM wh_notifications WHERE id = $1", [id]);
    return rows[0] && toNotification(rows[0]);
  }

  async list(query: NotificationQuery): Promise<Notification[]> {
    // Only the conditions given are written: a plan for "($n IS NULL OR …)" can't use the cursor to
    // start the index scan, and the one plan kept per statement (see STABLE_PLANS) is made that way.
    const values: unknown[] = [query.subscriptionId];
    const where = ["subscription_id = $1"];
    if (query.status) where.push(`status = $${values.push(query.status)}`);
    if (query.event) where.push(`event = $${values.push(query.event)}`);
    if (query.since) where.push(`created_at >= $${values.push(query.since)}`);
    if (query.until) where.push(`created_at < $${values.push(query.until)}`);
    if (query.before) where.push(`(created_at, id) < ($${values.push(query.before.createdAt)}, $${values.push(query.before.id)})`);
    const { rows } = await this.pool.query<NotificationRow>(
      `SELECT * FROM wh_notifications WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT $${values.push(query.limit)}`,
      values,
    );
    return rows.map(toNotification);
  }

  async listFailedSince(subscriptionId: string, since: Date, limit: number): Promise<Notification[]> {
    const { rows } = await this.pool.query<NotificationRow>(
      `SELECT * FROM wh_notifications WHERE subscription_id = $1 AND status = 'failed' AND created_at >= $2
       ORDER BY created_at, id LIMIT $3`,
      [subscriptionId, since, limit],
    );
    return rows.map(toNotification);
  }

  async listAttempts(notificationId: string): Promise<DeliveryAttempt[]> {
    const { rows } = await this.pool.query<AttemptRow>("SELECT * FROM wh_delivery_attempts WHERE notification_id = $1 ORDER BY id", [
      notificationId,
    ]);
    return rows.map(toAttempt);
  }

  async purgeEnded(now: Date, defaultRetentionMs: number, limit: number): Promise<{ notifications: number; attempts: number }> {
    const { rows } = await this.pool.query<{ notifications: number; attempts: number }>({
      name: "wh-purge-ended",
      text: PURGE_ENDED,
      values: [now, defaultRetentionMs, limit],
    });
    return rows[0] ?? { notifications: 0, attempts: 0 };
  }

  async purgeExpiredKeys(now: Date, defaultRetentionMs: number, lifetimeMs: number, limit: number): Promise<number> {
    const { rows } = await this.pool.query<{ deleted: number }>({
      name: "wh-purge-expired-keys",
      text: PURGE_EXPIRED_KEYS,
      values: [now, defaultRetentionMs, lifetimeMs, limit],
    });
    return rows[0]?.deleted ?? 0;
  }

  async oldestCreatedAt(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ oldest: Date | null }>({ name: "wh-oldest-notification", text: OLDEST_CREATED });
    return rows[0]?.oldest ?? undefined;
  }
}
