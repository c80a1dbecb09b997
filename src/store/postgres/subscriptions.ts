import { Coalescer } from "../../coalescer.js";
import type { JsonObject, SignatureScheme, Subscription } from "../../domain/model.js";
import { SUBSCRIPTION_DELETED } from "../../domain/model.js";
import type { Cursor, QuotaInsert, QuotaKey, QuotaRefusal, SubscriptionStore } from "../../domain/ports.js";
import { isDataError, optional } from "./rows.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";
import { inTransaction } from "./transaction.js";

export interface SubscriptionRow {
  id: string;
  client_id: string;
  event: string;
  url: string;
  description: string;
  enabled: boolean;
  signature_scheme: SignatureScheme;
  public_key_pem: string;
  private_key_pem: string;
  next_public_key_pem: string | null;
  next_private_key_pem: string | null;
  rotation_deadline: Date | null;
  failing_since: Date | null;
  failing_noticed_at: Date | null;
  disabled_reason: string | null;
  disabled_at: Date | null;
  rate_limit_per_second: number | null;
  sealed_headers: string | null;
  payload_filter: JsonObject | null;
  lease_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Every column, checked against the row type: joins name them one by one. */
const COLUMN_SET: Record<keyof SubscriptionRow, true> = {
  id: true,
  client_id: true,
  event: true,
  url: true,
  description: true,
  enabled: true,
  signature_scheme: true,
  public_key_pem: true,
  private_key_pem: true,
  next_public_key_pem: true,
  next_private_key_pem: true,
  rotation_deadline: true,
  failing_since: true,
  failing_noticed_at: true,
  disabled_reason: true,
  disabled_at: true,
  rate_limit_per_second: true,
  sealed_headers: true,
  payload_filter: true,
  lease_expires_at: true,
  created_at: true,
  updated_at: true,
};
export const SUBSCRIPTION_COLUMNS = Object.keys(COLUMN_SET) as (keyof SubscriptionRow)[];

/**
 * The enabled subscriptions of each (client $1[i], event $2[i]): what a publish fans out to. The ANY
 * conditions keep the read on its index whatever the statistics (a plan made while the table looked empty
 * would read all of it).
 */
export const SUBSCRIPTIONS_FOR_EVENTS = `
  SELECT s.* FROM (SELECT DISTINCT client_id, event FROM unnest($1::text[], $2::text[]) AS t (client_id, event)) AS t
  JOIN wh_subscriptions s ON s.client_id = t.client_id AND s.event = t.event AND s.enabled
  WHERE s.client_id = ANY ($1::text[]) AND s.event = ANY ($2::text[])
  ORDER BY s.created_at, s.id`;

export const toSubscription = (row: SubscriptionRow): Subscription => ({
  id: row.id,
  clientId: row.client_id,
  event: row.event,
  url: row.url,
  description: row.description,
  enabled: row.enabled,
  signatureScheme: row.signature_scheme,
  publicKeyPem: row.public_key_pem,
  privateKeyPem: row.private_key_pem,
  ...optional("nextPublicKeyPem", row.next_public_key_pem),
  ...optional("nextPrivateKeyPem", row.next_private_key_pem),
  ...optional("rotationDeadline", row.rotation_deadline),
  ...optional("failingSince", row.failing_since),
  ...optional("failingNoticedAt", row.failing_noticed_at),
  ...optional("disabledReason", row.disabled_reason),
  ...optional("disabledAt", row.disabled_at),
  ...optional("rateLimitPerSecond", row.rate_limit_per_second),
  ...optional("sealedHeaders", row.sealed_headers),
  ...optional("filter", row.payload_filter),
  ...optional("leaseExpiresAt", row.lease_expires_at),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** The owner-controlled columns, in the order `update` and `insert` bind them after id. */
const mutable = (s: Subscription) => [
  s.url,
  s.description,
  s.enabled,
  s.publicKeyPem,
  s.privateKeyPem,
  s.nextPublicKeyPem ?? null,
  s.nextPrivateKeyPem ?? null,
  s.rotationDeadline ?? null,
  s.disabledReason ?? null,
  s.disabledAt ?? null,
  s.updatedAt,
  s.rateLimitPerSecond ?? null,
  s.sealedHeaders ?? null,
  // As text: the driver would send a JavaScript object as it pleases.
  s.filter ? JSON.stringify(s.filter) : null,
];

export class PostgresSubscriptionStore implements SubscriptionStore {
  /**
   * Publishes arriving together look up their subscribers in one statement.
   * Each subscription comes once, however many of the calls name its client
   * and event: a burst of publishes to one event would otherwise bring its
   * rows (about 3 KB each, mostly keys) once per call.
   */
  readonly #fanOutReads = new Coalescer<{ clientId: string; event: string }, Subscription[]>(
    async (keys) => {
      const { rows } = await this.pool.query<SubscriptionRow>({
        name: "wh-subscriptions-for-events",
        text: SUBSCRIPTIONS_FOR_EVENTS,
        values: [keys.map((k) => k.clientId), keys.map((k) => k.event)],
      });
      const byKey = new Map<string, Subscription[]>();
      for (const row of rows) {
        const key = JSON.stringify([row.client_id, row.event]);
        const subscription = toSubscription(row);
        const found = byKey.get(key);
        if (found) found.push(subscription);
        else byKey.set(key, [subscription]);
      }
      return keys.map((k) => [...(byKey.get(JSON.stringify([k.clientId, k.event])) ?? [])]);
    },
    { splitOn: isDataError },
  );

  constructor(private readonly pool: SqlPool) {}

  insert(s: Subscription): Promise<void> {
    return this.#insert(this.pool, s);
  }

  insertWithinQuota(s: Subscription, defaultQuota: number): Promise<QuotaInsert> {
    return inTransaction(this.pool, async (connection) => {
      // Creates for one client take turns on its row, each checking after the one before committed.
      // (NO KEY: the foreign keys' KEY SHARE locks, new API keys' and subscriptions', don't wait for it.)
      const refused = await this.#refusal(connection, s, defaultQuota, "FOR NO KEY UPDATE");
      if (refused) return refused;
      await this.#insert(connection, s);
      return { inserted: true };
    });
  }

  refusal(s: QuotaKey, defaultQuota: number): Promise<QuotaRefusal | undefined> {
    return this.#refusal(this.pool, s, defaultQuota, "");
  }

  async #refusal(
    connection: Pick<SqlClient, "query">,
    s: QuotaKey,
    defaultQuota: number,
    lock: "FOR NO KEY UPDATE" | "",
  ): Promise<QuotaRefusal | undefined> {
    const { rows: owner } = await connection.query<{ quota: number }>(
      `SELECT COALESCE(max_subscriptions, $2) AS quota FROM wh_clients WHERE id = $1 ${lock}`,
      [s.clientId, defaultQuota],
    );
    const quota = owner[0]?.quota;
    if (quota === undefined) throw new Error(`subscription ${s.id}: client ${s.clientId} does not exist`);
    const { rows: same } = await connection.query<{ id: string }>(
      `SELECT id FROM wh_subscriptions WHERE client_id = $1 AND url = $2 AND event = $3 AND signature_scheme = $4
       ORDER BY created_at, id LIMIT 1`,
      [s.clientId, s.url, s.event, s.signatureScheme],
    );
    if (same[0]) return { inserted: false, duplicateOf: same[0].id };
    const { rows: held } = await connection.query<{ count: number }>(
      "SELECT count(*)::int AS count FROM wh_subscriptions WHERE client_id = $1",
      [s.clientId],
    );
    return (held[0]?.count ?? 0) >= quota ? { inserted: false, quota } : undefined;
  }

  async #insert(connection: Pick<SqlClient, "query">, s: Subscription): Promise<void> {
    await connection.query(
      `INSERT INTO wh_subscriptions (id, url, description, enabled, public_key_pem, private_key_pem, next_public_key_pem,
         next_private_key_pem, rotation_deadline, disabled_reason, disabled_at, updated_at, rate_limit_per_second, sealed_headers,
         payload_filter, client_id, event, created_at, failing_since, signature_scheme, lease_expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb, $16, $17, $18, $19, $20, $21)`,
      [s.id, ...mutable(s), s.clientId, s.event, s.createdAt, s.failingSince ?? null, s.signatureScheme, s.leaseExpiresAt ?? null],
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

  async listByClient(clientId: string, limit: number, after?: Cursor): Promise<Subscription[]> {
    // The cursor's condition only when there is one (see PostgresNotificationStore.list).
    const { rows } = await this.pool.query<SubscriptionRow>(
      after
        ? "SELECT * FROM wh_subscriptions WHERE client_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4"
        : "SELECT * FROM wh_subscriptions WHERE client_id = $1 ORDER BY created_at, id LIMIT $2",
      after ? [clientId, after.createdAt, after.id, limit] : [clientId, limit],
    );
    return rows.map(toSubscription);
  }

  listEnabledForEvent(clientId: string, event: string): Promise<Subscription[]> {
    return this.#fanOutReads.call({ clientId, event });
  }

  async update(s: Subscription, expectedUpdatedAt: Date): Promise<boolean> {
    // failing_since belongs to the delivery worker (markFailing/markHealthy): never written here.
    const { rowCount } = await this.pool.query(
      `UPDATE wh_subscriptions SET url = $2, description = $3, enabled = $4, public_key_pem = $5, private_key_pem = $6,
         next_public_key_pem = $7, next_private_key_pem = $8, rotation_deadline = $9,
         disabled_reason = $10, disabled_at = $11, updated_at = $12, rate_limit_per_second = $13, sealed_headers = $14,
         payload_filter = $15::jsonb
       WHERE id = $1 AND updated_at = $16`,
      [s.id, ...mutable(s), expectedUpdatedAt],
    );
    return rowCount === 1;
  }

  delete(id: string): Promise<boolean> {
    return this.#delete(id, null);
  }

  async renewLeases(ids: readonly string[], until: Date): Promise<void> {
    await this.pool.query(
      "UPDATE wh_subscriptions SET lease_expires_at = $2 WHERE id = ANY ($1::text[]) AND lease_expires_at IS NOT NULL",
      [ids, until],
    );
  }

  async listLeaseEnded(now: Date, limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      "SELECT id FROM wh_subscriptions WHERE lease_expires_at < $1 ORDER BY lease_expires_at LIMIT $2",
      [now, limit],
    );
    return rows.map((row) => row.id);
  }

  deleteLeaseEnded(id: string, now: Date): Promise<boolean> {
    return this.#delete(id, now);
  }

  /** Deletes it, when `leaseEndedBy` is set only if its lease ended before then. */
  async #delete(id: string, leaseEndedBy: Date | null): Promise<boolean> {
    const { rows } = await this.pool.query<{ deleted: boolean }>(
      `WITH gone AS (
              DELETE FROM wh_subscriptions WHERE id = $1 AND ($2::timestamptz IS NULL OR lease_expires_at < $2) RETURNING id
            ),
            ended AS (
              UPDATE wh_notifications SET status = 'failed', attempt_count = attempt_count + 1, updated_at = now()
              WHERE subscription_id = $1 AND status = 'pending' AND EXISTS (SELECT 1 FROM gone)
              RETURNING id, attempt_count - 1 AS attempt
            ),
            recorded AS (
              INSERT INTO wh_delivery_attempts (notification_id, attempt, started_at, duration_ms, error, succeeded)
              SELECT id, attempt, now(), 0, '${SUBSCRIPTION_DELETED}', false FROM ended
            )
       SELECT EXISTS (SELECT 1 FROM gone) AS deleted`,
      [id, leaseEndedBy],
    );
    return rows[0]?.deleted === true;
  }

  /** The row is written only where no streak is on: a retry storm costs no write per failed attempt. */
  async markFailing(id: string, at: Date): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ failing_since: Date | null }>(
      `WITH marked AS (UPDATE wh_subscriptions SET failing_since = $2 WHERE id = $1 AND failing_since IS NULL RETURNING failing_since)
       SELECT failing_since FROM marked
       UNION ALL SELECT failing_since FROM wh_subscriptions WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM marked)`,
      [id, at],
    );
    // NULL: another statement began the streak at this very moment (this one's snapshot predates it).
    return rows[0]?.failing_since ?? undefined;
  }

  async markHealthy(id: string): Promise<void> {
    await this.pool.query(
      "UPDATE wh_subscriptions SET failing_since = NULL, failing_noticed_at = NULL WHERE id = $1 AND failing_since IS NOT NULL",
      [id],
    );
  }

  async claimRotationsEnding(by: Date, now: Date): Promise<Subscription[]> {
    const { rows } = await this.pool.query<SubscriptionRow>(
      `UPDATE wh_subscriptions SET rotation_noticed_for = rotation_deadline
       WHERE rotation_deadline IS NOT NULL AND rotation_deadline > $2 AND rotation_deadline <= $1 AND enabled
         AND next_public_key_pem IS NOT NULL AND rotation_noticed_for IS DISTINCT FROM rotation_deadline
       RETURNING *`,
      [by, now],
    );
    return rows.map(toSubscription);
  }

  async noticeFailing(id: string, since: Date, at: Date): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "UPDATE wh_subscriptions SET failing_noticed_at = $3 WHERE id = $1 AND failing_since = $2 AND failing_noticed_at IS NULL",
      [id, since, at],
    );
    return rowCount === 1;
  }

  async disable(id: string, reason: string, at: Date): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "UPDATE wh_subscriptions SET enabled = false, disabled_reason = $2, disabled_at = $3, updated_at = $3 WHERE id = $1 AND enabled",
      [id, reason, at],
    );
    return rowCount === 1;
  }
}
