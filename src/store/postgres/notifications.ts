import { Coalescer } from "../../coalescer.js";
import type { DeliveryAttempt, Notification, NotificationStatus, Subscription } from "../../domain/model.js";
import type { DeliveryRead, NotificationQuery, NotificationStore } from "../../domain/ports.js";
import { type ArrayElement, arrayLiteral } from "./array-literal.js";
import { isDataError, optional } from "./rows.js";
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
 * returns many rows: the read before attempts, and the lock statement that
 * hands jobs out. A subscription's columns (its keys alone are about 3 KB)
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
 * An attempt's notification and subscription, for many attempts at once.
 * Both are read by their primary key whatever the statistics: by `id = ANY`
 * (a join planned while a table looked empty read all of it once per row),
 * in id order, which only the primary key gives (a plan made so took
 * another index that holds the id, and read the whole of it), each read once
 * (MATERIALIZED: not folded back into a join).
 */
export const READ_FOR_DELIVERY = `
  WITH n AS MATERIALIZED (SELECT * FROM wh_notifications WHERE id = ANY ($1::text[]) ORDER BY id),
       s AS MATERIALIZED (SELECT * FROM wh_subscriptions WHERE id = ANY (ARRAY(SELECT subscription_id FROM n)) ORDER BY id)
  SELECT ${forDeliveryColumns("row_number() OVER (PARTITION BY s.id ORDER BY n.id) = 1")}
  FROM n LEFT JOIN s ON s.id = n.subscription_id`;

/**
 * Inserts the notifications of `$1`…`$10` (insertParameters): a fan-out is one round trip. The delivery
 * engine inserts through it, each notification with its job. (`scheduled` is always true now; an older
 * version used false for a notification not yet queued, and the engine takes those over at start.)
 */
export const INSERT_NOTIFICATIONS = `
  INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, redelivery_of, scheduled, created_at, updated_at)
  SELECT id, subscription_id, client_id, event, body, status, attempt_count, redelivery_of, true, created_at, updated_at
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::timestamptz[], $10::timestamptz[])
    AS t (id, subscription_id, client_id, event, body, status, attempt_count, redelivery_of, created_at, updated_at)`;

/** The fields insertParameters writes, each one the array literal can hold (the compiler checks it). */
type InsertedField = { [K in keyof Notification]-?: Notification[K] extends ArrayElement ? K : never }[keyof Notification];

/** One column array (an array literal) per inserted field, in insertNotifications' order. */
export function insertParameters(notifications: readonly Notification[]): string[] {
  const column = (key: InsertedField) => arrayLiteral(notifications.map((n) => n[key] ?? null));
  return [
    column("id"),
    column("subscriptionId"),
    column("clientId"),
    column("event"),
    column("body"),
    column("status"),
    column("attemptCount"),
    column("redeliveryOf"),
    column("createdAt"),
    column("updatedAt"),
  ];
}

/**
 * Records attempts ($1…$9, recordParameters): the rows, then each notification's status, as the CTEs
 * `input`, `attempts` and `recorded`, for a statement to end as it needs (the delivery engine's adds the
 * jobs' removal). A final status (delivered, failed) stays: an attempt that was in flight when its
 * subscription was deleted records its outcome without reopening the notification. The notifications are
 * named by `id = ANY`, an index condition whatever the statistics: joined on the input alone, a plan made
 * while the table was empty and analyzed (a new database) read the whole table at every record.
 */
export const RECORD_ATTEMPTS_CTES = `
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

// Attempts recorded together are one statement.
const RECORD_ATTEMPTS = `${RECORD_ATTEMPTS_CTES} SELECT count(*) FROM recorded`;

/** An attempt and the status it moves its notification to. */
export type RecordedAttempt = { attempt: DeliveryAttempt; status: NotificationStatus };

/** RECORD_ATTEMPTS_CTES' parameters, one array literal per column. */
export function recordParameters(records: readonly RecordedAttempt[]): string[] {
  const column = (pick: (r: RecordedAttempt) => ArrayElement) => arrayLiteral(records.map(pick));
  return [
    column((r) => r.attempt.notificationId),
    column((r) => r.attempt.attempt),
    column((r) => r.attempt.startedAt),
    column((r) => r.attempt.durationMs),
    column((r) => r.attempt.statusCode ?? null),
    // PostgreSQL text can't hold NUL.
    column((r) => r.attempt.responseBody?.replaceAll("\u0000", "\uFFFD") ?? null),
    column((r) => r.attempt.error ?? null),
    column((r) => r.attempt.succeeded),
    column((r) => r.status),
  ];
}

export class PostgresNotificationStore implements NotificationStore {
  /** Deliveries running side by side read and record through shared statements. */
  readonly #deliveryReads = new Coalescer<string, DeliveryRead | undefined>(
    async (ids) => {
      const { rows } = await this.pool.query<ForDeliveryRow>({ name: "wh-read-for-delivery", text: READ_FOR_DELIVERY, values: [ids] });
      const reads = forDeliveryOfRows(rows);
      const byId = new Map(rows.map((row, i) => [row.n_id, reads[i]]));
      return ids.map((id) => byId.get(id));
    },
    { splitOn: isDataError },
  );
  readonly #records = new Coalescer<RecordedAttempt, void>(
    async (records) => {
      await this.pool.query({ name: "wh-record-attempts", text: RECORD_ATTEMPTS, values: recordParameters(records) });
      return records.map(() => undefined);
    },
    { splitOn: isDataError },
  );

  constructor(private readonly pool: SqlPool) {}

  async get(id: string): Promise<Notification | undefined> {
    const { rows } = await this.pool.query<NotificationRow>("SELECT * FROM wh_notifications WHERE id = $1", [id]);
    return rows[0] && toNotification(rows[0]);
  }

  getForDelivery(id: string): Promise<DeliveryRead | undefined> {
    return this.#deliveryReads.call(id);
  }

  async list(query: NotificationQuery): Promise<Notification[]> {
    // Only the conditions given are written: a plan for "($n IS NULL OR …)" can't use the cursor to
    // start the index scan, and the one plan kept per statement (see STABLE_PLANS) is made that way.
    const values: unknown[] = [query.subscriptionId];
    const where = ["subscription_id = $1"];
    if (query.status) where.push(`status = $${values.push(query.status)}`);
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

  recordAttempt(attempt: DeliveryAttempt, status: NotificationStatus): Promise<void> {
    return this.#records.call({ attempt, status });
  }

  async listAttempts(notificationId: string): Promise<DeliveryAttempt[]> {
    const { rows } = await this.pool.query<AttemptRow>("SELECT * FROM wh_delivery_attempts WHERE notification_id = $1 ORDER BY id", [
      notificationId,
    ]);
    return rows.map(toAttempt);
  }
}
