import { newId } from "../../domain/ids.js";
import type { ApiKeyRecord, Client, ClientLimitChanges } from "../../domain/model.js";
import type { ClientStore } from "../../domain/ports.js";
import { optional } from "./rows.js";
import type { SqlPool } from "./sql-pool.js";
import { inTransaction } from "./transaction.js";

interface ClientRow {
  id: string;
  name: string;
  created_at: Date;
  retention_ms: number | null;
  max_subscriptions: number | null;
}

const toClient = (row: ClientRow): Client => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at,
  ...optional("retentionMs", row.retention_ms),
  ...optional("maxSubscriptions", row.max_subscriptions),
});

/** ClientRow's columns of `c` (a bigint comes as a string: the retention is read as a number). */
const CLIENT_COLUMNS = "c.id, c.name, c.created_at, c.retention_ms::float8 AS retention_ms, c.max_subscriptions";

export class PostgresClientStore implements ClientStore {
  constructor(private readonly pool: SqlPool) {}

  async ensureWithKey(name: string, keyHash: string): Promise<Client> {
    const existing = await this.findByKeyHash(keyHash);
    if (existing) return existing;
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
        await connection.query("INSERT INTO wh_api_keys (id, key_hash, client_id, created_at) VALUES ($1, $2, $3, $4)", [
          newId("key"),
          keyHash,
          client.id,
          client.createdAt,
        ]);
      }
      return client;
    });
  }

  async findByKeyHash(keyHash: string): Promise<Client | undefined> {
    const { rows } = await this.pool.query<ClientRow>(
      `SELECT ${CLIENT_COLUMNS} FROM wh_api_keys k JOIN wh_clients c ON c.id = k.client_id
       WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [keyHash],
    );
    return rows[0] && toClient(rows[0]);
  }

  async create(client: Client, key: ApiKeyRecord): Promise<void> {
    await this.pool.query(
      `WITH new_client AS (
         INSERT INTO wh_clients (id, name, created_at, retention_ms, max_subscriptions) VALUES ($1, $2, $3, $7, $8) RETURNING id
       )
       INSERT INTO wh_api_keys (id, key_hash, client_id, created_at) SELECT $4, $5, id, $6 FROM new_client`,
      [
        client.id,
        client.name,
        client.createdAt,
        key.id,
        key.keyHash,
        key.createdAt,
        client.retentionMs ?? null,
        client.maxSubscriptions ?? null,
      ],
    );
  }

  async get(id: string): Promise<Client | undefined> {
    const { rows } = await this.pool.query<ClientRow>(`SELECT ${CLIENT_COLUMNS} FROM wh_clients c WHERE c.id = $1`, [id]);
    return rows[0] && toClient(rows[0]);
  }

  async list(): Promise<Client[]> {
    const { rows } = await this.pool.query<ClientRow>(`SELECT ${CLIENT_COLUMNS} FROM wh_clients c ORDER BY c.created_at, c.id`);
    return rows.map(toClient);
  }

  async setLimits(id: string, changes: ClientLimitChanges): Promise<Client | undefined> {
    // $2/$4 say whether to write each limit, so that one left out keeps its value.
    const { rows } = await this.pool.query<ClientRow>(
      `UPDATE wh_clients c SET retention_ms = CASE WHEN $2 THEN $3::bigint ELSE retention_ms END,
         max_subscriptions = CASE WHEN $4 THEN $5::int ELSE max_subscriptions END
       WHERE c.id = $1 RETURNING ${CLIENT_COLUMNS}`,
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
    await this.pool.query("INSERT INTO wh_api_keys (id, key_hash, client_id, created_at) VALUES ($1, $2, $3, $4)", [
      key.id,
      key.keyHash,
      key.clientId,
      key.createdAt,
    ]);
  }

  async revokeKey(clientId: string, keyId: string, at: Date): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "UPDATE wh_api_keys SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND client_id = $2",
      [keyId, clientId, at],
    );
    return rowCount === 1;
  }
}
