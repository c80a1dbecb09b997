import type { Pool } from "pg";
import { newId } from "../../domain/ids.js";
import type { Client, DeliveryAttempt, Notification, NotificationStatus, Subscription } from "../../domain/model.js";
import type { ClientStore, NotificationStore, Store, SubscriptionStore } from "../../domain/ports.js";

interface SubscriptionRow {
  id: string;
  client_id: string;
  event: string;
  url: string;
  description: string;
  enabled: boolean;
  public_key_pem: string;
  private_key_pem: string;
  created_at: Date;
  updated_at: Date;
}

interface NotificationRow {
  id: string;
  subscription_id: string;
  client_id: string;
  event: string;
  body: string;
  status: NotificationStatus;
  attempt_count: number;
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

const toSubscription = (row: SubscriptionRow): Subscription => ({
  id: row.id,
  clientId: row.client_id,
  event: row.event,
  url: row.url,
  description: row.description,
  enabled: row.enabled,
  publicKeyPem: row.public_key_pem,
  privateKeyPem: row.private_key_pem,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const toNotification = (row: NotificationRow): Notification => ({
  id: row.id,
  subscriptionId: row.subscription_id,
  clientId: row.client_id,
  event: row.event,
  body: row.body,
  status: row.status,
  attemptCount: row.attempt_count,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const toAttempt = (row: AttemptRow): DeliveryAttempt => ({
  notificationId: row.notification_id,
  attempt: row.attempt,
  startedAt: row.started_at,
  durationMs: row.duration_ms,
  ...(row.status_code === null ? {} : { statusCode: row.status_code }),
  ...(row.response_body === null ? {} : { responseBody: row.response_body }),
  ...(row.error === null ? {} : { error: row.error }),
  succeeded: row.succeeded,
});

class PostgresClientStore implements ClientStore {
  constructor(private readonly pool: Pool) {}

  async ensureWithKey(name: string, keyHash: string): Promise<Client> {
    const existing = await this.findByKeyHash(keyHash);
    if (existing) return existing;
    const client: Client = { id: newId("cli"), name, createdAt: new Date() };
    // One statement, so two instances bootstrapping the same key can't both insert.
    const { rows } = await this.pool.query<{ client_id: string }>(
      `WITH new_client AS (
         INSERT INTO wh_clients (id, name, created_at) VALUES ($1, $2, $3) RETURNING id
       )
       INSERT INTO wh_api_keys (key_hash, client_id, created_at)
       SELECT $4, id, $3 FROM new_client
       ON CONFLICT (key_hash) DO NOTHING
       RETURNING client_id`,
      [client.id, client.name, client.createdAt, keyHash],
    );
    if (rows.length === 1) return client;
    const winner = await this.findByKeyHash(keyHash);
    if (!winner) throw new Error("client key vanished while bootstrapping");
    return winner;
  }

  async findByKeyHash(keyHash: string): Promise<Client | undefined> {
    const { rows } = await this.pool.query<{ id: string; name: string; created_at: Date }>(
      `SELECT c.id, c.name, c.created_at FROM wh_api_keys k JOIN wh_clients c ON c.id = k.client_id
       WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [keyHash],
    );
    const row = rows[0];
    return row && { id: row.id, name: row.name, createdAt: row.created_at };
  }
}

class PostgresSubscriptionStore implements SubscriptionStore {
  constructor(private readonly pool: Pool) {}

  async insert(s: Subscription): Promise<void> {
    await this.pool.query(
      `INSERT INTO wh_subscriptions (id, client_id, event, url, description, enabled, public_key_pem, private_key_pem, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [s.id, s.clientId, s.event, s.url, s.description, s.enabled, s.publicKeyPem, s.privateKeyPem, s.createdAt, s.updatedAt],
    );
  }

  async get(id: string): Promise<Subscription | undefined> {
    const { rows } = await this.pool.query<SubscriptionRow>("SELECT * FROM wh_subscriptions WHERE id = $1", [id]);
    return rows[0] && toSubscription(rows[0]);
  }

  async findByUrl(clientId: string, url: string): Promise<Subscription[]> {
    const { rows } = await this.pool.query<SubscriptionRow>(
      "SELECT * FROM wh_subscriptions WHERE client_id = $1 AND url = $2 ORDER BY created_at, id",
      [clientId, url],
    );
    return rows.map(toSubscription);
  }
}

class PostgresNotificationStore implements NotificationStore {
  constructor(private readonly pool: Pool) {}

  async insert(notifications: Notification[]): Promise<void> {
    if (notifications.length === 0) return;
    // One multi-row INSERT from column arrays: a fan-out is one round trip.
    const column = <K extends keyof Notification>(key: K) => notifications.map((n) => n[key]);
    await this.pool.query(
      `INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, scheduled, created_at, updated_at)
       SELECT id, subscription_id, client_id, event, body, status, attempt_count, false, created_at, updated_at
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::timestamptz[], $9::timestamptz[])
         AS t (id, subscription_id, client_id, event, body, status, attempt_count, created_at, updated_at)`,
      [
        column("id"),
        column("subscriptionId"),
        column("clientId"),
        column("event"),
        column("body"),
        column("status"),
        column("attemptCount"),
        column("createdAt"),
        column("updatedAt"),
      ],
    );
  }

  async markScheduled(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query("UPDATE wh_notifications SET scheduled = true WHERE id = ANY($1::text[])", [ids]);
  }

  async listUnscheduled(createdBefore: Date, limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      "SELECT id FROM wh_notifications WHERE NOT scheduled AND created_at < $1 ORDER BY created_at LIMIT $2",
      [createdBefore, limit],
    );
    return rows.map((row) => row.id);
  }

  async get(id: string): Promise<Notification | undefined> {
    const { rows } = await this.pool.query<NotificationRow>("SELECT * FROM wh_notifications WHERE id = $1", [id]);
    return rows[0] && toNotification(rows[0]);
  }

  async recordAttempt(a: DeliveryAttempt, status: NotificationStatus): Promise<void> {
    await this.pool.query(
      `WITH attempt AS (
         INSERT INTO wh_delivery_attempts (notification_id, attempt, started_at, duration_ms, status_code, response_body, error, succeeded)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       )
       UPDATE wh_notifications SET status = $9, attempt_count = GREATEST(attempt_count, $2 + 1), updated_at = now()
       WHERE id = $1`,
      [
        a.notificationId,
        a.attempt,
        a.startedAt,
        a.durationMs,
        a.statusCode ?? null,
        a.responseBody?.replaceAll("\u0000", "\uFFFD") ?? null,
        a.error ?? null,
        a.succeeded,
        status,
      ],
    );
  }

  async listAttempts(notificationId: string): Promise<DeliveryAttempt[]> {
    const { rows } = await this.pool.query<AttemptRow>("SELECT * FROM wh_delivery_attempts WHERE notification_id = $1 ORDER BY id", [
      notificationId,
    ]);
    return rows.map(toAttempt);
  }
}

/** The storage port on PostgreSQL (a server, or embedded PGlite behind a socket). */
export function createPostgresStore(pool: Pool): Store {
  return {
    clients: new PostgresClientStore(pool),
    subscriptions: new PostgresSubscriptionStore(pool),
    notifications: new PostgresNotificationStore(pool),
  };
}
