import { newId } from "../../domain/ids.js";
import type { ApiKeyRecord, Client, ClientLimitChanges } from "../../domain/model.js";
import type { BarredClient, ClientStore, DeletedClientPurge, KeyHolder } from "../../domain/ports.js";
import { DELETE_DOOMED } from "./notifications.js";
import { optional } from "./rows.js";
import type { SqlPool } from "./sql-pool.js";
import { inTransaction } from "./transaction.js";

interface ClientRow {
  id: string;
  name: string;
  created_at: Date;
  retention_ms: number | null;
  max_subscriptions: number | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

interface ApiKeyRow {
  id: string;
  key_hash: string;
  client_id: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const toClient = (row: ClientRow): Client => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at,
  ...optional("retentionMs", row.retention_ms),
  ...optional("maxSubscriptions", row.max_subscriptions),
  ...(row.disabled_at ? { disabled: { at: row.disabled_at, reason: row.disabled_reason ?? "" } } : {}),
});

const toApiKey = (row: ApiKeyRow): ApiKeyRecord => ({
  id: row.id,
  clientId: row.client_id,
  keyHash: row.key_hash,
  name: row.name,
  createdAt: row.created_at,
  ...optional("lastUsedAt", row.last_used_at),
  ...optional("revokedAt", row.revoked_at),
});

/** ClientRow's columns of `c` (a bigint comes as a string: the retention is read as a number). */
const CLIENT_COLUMNS =
  "c.id, c.name, c.created_at, c.retention_ms::float8 AS retention_ms, c.max_subscriptions, c.disabled_at, c.disabled_reason";

/**
 * One batch of a deleted client's notifications (their attempts and jobs go with them), skipping
 * those whose job is locked: the attempt under way records against it, and the worker hands it back
 * unattempted (the client is barred), so a later batch takes it. Rows by `id = ANY (ARRAY(…))`, an
 * index condition whatever the statistics (see notifications.ts's PURGE_ENDED).
 */
const PURGE_DELETED_NOTIFICATIONS = `
  WITH doomed AS (
    SELECT n.id FROM wh_notifications n
    WHERE n.client_id = $1 AND NOT EXISTS (SELECT 1 FROM wh_delivery_jobs j WHERE j.id = n.id AND j.locked_at IS NOT NULL)
    ORDER BY n.created_at, n.id
    LIMIT $2
    FOR UPDATE OF n SKIP LOCKED
  ), ${DELETE_DOOMED}`;

/**
 * Then its subscriptions and idempotency keys, a batch of each, found by `= ANY (ARRAY(…))` as above
 * (keys by ctid: they are never updated, and locked from the moment they are found); the client
 * goes once it holds nothing.
 */
const PURGE_DELETED_REST = `
  WITH subscriptions AS (
    DELETE FROM wh_subscriptions WHERE id = ANY (ARRAY(SELECT id FROM wh_subscriptions WHERE client_id = $1 LIMIT $2)) RETURNING 1
  ), idempotency_keys AS (
    DELETE FROM wh_idempotency_keys
    WHERE ctid = ANY (ARRAY(SELECT ctid FROM wh_idempotency_keys WHERE client_id = $1 LIMIT $2 FOR UPDATE SKIP LOCKED)) RETURNING 1
  )
  SELECT (SELECT count(*) FROM subscriptions)::int + (SELECT count(*) FROM idempotency_keys)::int AS others`;

const DELETE_EMPTIED_CLIENT = `
  DELETE FROM wh_clients c WHERE c.id = $1 AND c.deleted_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM wh_notifications WHERE client_id = $1)
    AND NOT EXISTS (SELECT 1 FROM wh_subscriptions WHERE client_id = $1)
    AND NOT EXISTS (SELECT 1 FROM wh_idempotency_keys WHERE client_id = $1)
    AND NOT EXISTS (SELECT 1 FROM wh_api_keys WHERE client_id = $1)`;

export class PostgresClientStore implements ClientStore {
  constructor(private readonly pool: SqlPool) {}

  async ensureWithKey(name: string, keyHash: string): Promise<Client> {
    const existing = await this.findByKeyHash(keyHash);
    if (existing) return existing.client;
    // Instances bootstrapping the same key at once queue on this lock, so the
    // second finds the first's client instead of leaving an orphan of its own.
    return inTransaction(this.pool, async (connection) => {
      await connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [keyHash]);
      const { rows } = await connection.query<ClientRow>(
        `SELECT ${CLIENT_COLUMNS} FROM wh_api_keys k JOIN wh_clients c ON c.id = k.client_id WHERE k.key_hash = $1`,
        [keyHash],
      );
      const client: Client = rows[0] ? toClient(rows[0]) : { id: newId("cli"), name, createdAt: new Date() };
      if (!rows[0]) {
        await connection.query("INSERT INTO wh_clients (id, name, created_at) VALUES ($1, $2, $3)", [
          client.id,
          client.name,
          client.createdAt,
        ]);
        await connection.query("INSERT INTO wh_api_keys (id, key_hash, client_id, created_at, name) VALUES ($1, $2, $3, $4, $5)", [
          newId("key"),
          keyHash,
          client.id,
          client.createdAt,
          name,
        ]);
      }
      return client;
    });
  }

  async findByKeyHash(keyHash: string): Promise<KeyHolder | undefined> {
    const { rows } = await this.pool.query<ClientRow & { key_id: string }>(
      `SELECT ${CLIENT_COLUMNS}, k.id AS key_id FROM wh_api_keys k JOIN wh_clients c ON c.id = k.client_id
       WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND c.deleted_at IS NULL`,
      [keyHash],
    );
    return rows[0] && { client: toClient(rows[0]), keyId: rows[0].key_id };
  }

  async create(client: Client, key: ApiKeyRecord): Promise<void> {
    await this.pool.query(
      `WITH new_client AS (
         INSERT INTO wh_clients (id, name, created_at, retention_ms, max_subscriptions) VALUES ($1, $2, $3, $7, $8) RETURNING id
       )
       INSERT INTO wh_api_keys (id, key_hash, client_id, created_at, name) SELECT $4, $5, id, $6, $9 FROM new_client`,
      [
        client.id,
        client.name,
        client.createdAt,
        key.id,
        key.keyHash,
        key.createdAt,
        client.retentionMs ?? null,
        client.maxSubscriptions ?? null,
        key.name,
      ],
    );
  }

  async get(id: string): Promise<Client | undefined> {
    const { rows } = await this.pool.query<ClientRow>(
      `SELECT ${CLIENT_COLUMNS} FROM wh_clients c WHERE c.id = $1 AND c.deleted_at IS NULL`,
      [id],
    );
    return rows[0] && toClient(rows[0]);
  }

  async list(): Promise<Client[]> {
    const { rows } = await this.pool.query<ClientRow>(
      `SELECT ${CLIENT_COLUMNS} FROM wh_clients c WHERE c.deleted_at IS NULL ORDER BY c.created_at, c.id`,
    );
    return rows.map(toClient);
  }

  async setLimits(id: string, changes: ClientLimitChanges): Promise<Client | undefined> {
    // $2/$4 say whether to write each limit, so that one left out keeps its value.
    const { rows } = await this.pool.query<ClientRow>(
      `UPDATE wh_clients c SET retention_ms = CASE WHEN $2 THEN $3::bigint ELSE retention_ms END,
         max_subscriptions = CASE WHEN $4 THEN $5::int ELSE max_subscriptions END
       WHERE c.id = $1 AND c.deleted_at IS NULL RETURNING ${CLIENT_COLUMNS}`,
      [
        id,
        changes.retentionMs !== undefined,
        changes.retentionMs ?? null,
        changes.maxSubscriptions !== undefined,
        changes.maxSubscriptions ?? null,
      ],
    );
    return rows[0] && toClient(rows[0]);
  }

  async addKey(key: ApiKeyRecord): Promise<void> {
    await this.pool.query("INSERT INTO wh_api_keys (id, key_hash, client_id, created_at, name) VALUES ($1, $2, $3, $4, $5)", [
      key.id,
      key.keyHash,
      key.clientId,
      key.createdAt,
      key.name,
    ]);
  }

  async revokeKey(clientId: string, keyId: string, at: Date): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "UPDATE wh_api_keys SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND client_id = $2",
      [keyId, clientId, at],
    );
    return rowCount === 1;
  }

  async listKeys(clientId: string): Promise<ApiKeyRecord[]> {
    const { rows } = await this.pool.query<ApiKeyRow>(
      "SELECT id, key_hash, client_id, name, created_at, last_used_at, revoked_at FROM wh_api_keys WHERE client_id = $1 ORDER BY created_at, id",
      [clientId],
    );
    return rows.map(toApiKey);
  }

  async markKeyUsed(keyId: string, at: Date, withinMs: number): Promise<void> {
    await this.pool.query(
      `UPDATE wh_api_keys SET last_used_at = $2
       WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - make_interval(secs => $3::int / 1000.0))`,
      [keyId, at, withinMs],
    );
  }

  async setDisabled(id: string, disabled: { at: Date; reason: string } | null): Promise<Client | undefined> {
    const { rows } = await this.pool.query<ClientRow>(
      `UPDATE wh_clients c SET disabled_at = $2, disabled_reason = $3 WHERE c.id = $1 AND c.deleted_at IS NULL RETURNING ${CLIENT_COLUMNS}`,
      [id, disabled?.at ?? null, disabled?.reason ?? null],
    );
    return rows[0] && toClient(rows[0]);
  }

  async markDeleted(id: string, at: Date): Promise<boolean> {
    return inTransaction(this.pool, async (connection) => {
      const { rowCount } = await connection.query("UPDATE wh_clients SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL", [id, at]);
      if (rowCount !== 1) return false;
      await connection.query("DELETE FROM wh_api_keys WHERE client_id = $1", [id]);
      return true;
    });
  }

  async purgeDeleted(limit: number): Promise<DeletedClientPurge> {
    const { rows: deleted } = await this.pool.query<{ id: string }>(
      "SELECT id FROM wh_clients WHERE deleted_at IS NOT NULL ORDER BY deleted_at, id LIMIT 1",
    );
    const clientId = deleted[0]?.id;
    if (!clientId) return { notifications: 0, attempts: 0, others: 0 };
    const { rows } = await this.pool.query<{ notifications: number; attempts: number }>(PURGE_DELETED_NOTIFICATIONS, [clientId, limit]);
    const purged = rows[0] ?? { notifications: 0, attempts: 0 };
    if (purged.notifications > 0) return { ...purged, others: 0 };
    const { rows: rest } = await this.pool.query<{ others: number }>(PURGE_DELETED_REST, [clientId, limit]);
    const others = rest[0]?.others ?? 0;
    if (others > 0) return { ...purged, others };
    const { rowCount } = await this.pool.query(DELETE_EMPTIED_CLIENT, [clientId]);
    return { ...purged, others: rowCount ?? 0 };
  }

  async listBarred(): Promise<BarredClient[]> {
    const { rows } = await this.pool.query<{ id: string; disabled_reason: string | null; deleted_at: Date | null }>(
      "SELECT id, disabled_reason, deleted_at FROM wh_clients WHERE disabled_at IS NOT NULL OR deleted_at IS NOT NULL",
    );
    return rows.map((row) => ({ id: row.id, ...(row.deleted_at ? {} : { disabledReason: row.disabled_reason ?? "" }) }));
  }

  async validKeys(keyIds: readonly string[]): Promise<string[]> {
    if (keyIds.length === 0) return [];
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT k.id FROM wh_api_keys k JOIN wh_clients c ON c.id = k.client_id
       WHERE k.id = ANY($1::text[]) AND k.revoked_at IS NULL AND c.deleted_at IS NULL`,
      [keyIds],
    );
    return rows.map((row) => row.id);
  }
}
