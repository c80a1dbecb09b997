import type { SqlPool } from "./sql-pool.js";
import { inTransaction, MIGRATION_LOCK } from "./transaction.js";

/**
 * Forward-only migrations. Each runs once, in order, inside a transaction
 * holding an advisory lock, so instances starting together don't race.
 */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE wh_clients (
     id text PRIMARY KEY,
     name text NOT NULL,
     created_at timestamptz NOT NULL
   );
   CREATE TABLE wh_api_keys (
     id text PRIMARY KEY,
     key_hash text NOT NULL UNIQUE,
     client_id text NOT NULL REFERENCES wh_clients (id),
     created_at timestamptz NOT NULL,
     revoked_at timestamptz
   );
   CREATE INDEX wh_api_keys_client_idx ON wh_api_keys (client_id);
   CREATE TABLE wh_event_types (
     name text PRIMARY KEY,
     description text NOT NULL,
     sample_payload json NOT NULL,
     json_schema json,
     created_at timestamptz NOT NULL,
     updated_at timestamptz NOT NULL
   );
   CREATE TABLE wh_subscriptions (
     id text PRIMARY KEY,
     client_id text NOT NULL REFERENCES wh_clients (id),
     event text NOT NULL,
     url text NOT NULL,
     description text NOT NULL,
     enabled boolean NOT NULL,
     public_key_pem text NOT NULL,
     private_key_pem text NOT NULL,
     next_public_key_pem text,
     next_private_key_pem text,
     rotation_deadline timestamptz,
     failing_since timestamptz,
     disabled_reason text,
     disabled_at timestamptz,
     created_at timestamptz NOT NULL,
     updated_at timestamptz NOT NULL
   );
   CREATE INDEX wh_subscriptions_client_url_idx ON wh_subscriptions (client_id, url);
   CREATE INDEX wh_subscriptions_client_created_idx ON wh_subscriptions (client_id, created_at, id);
   CREATE INDEX wh_subscriptions_client_event_idx ON wh_subscriptions (client_id, event) WHERE enabled;
   CREATE TABLE wh_notifications (
     id text PRIMARY KEY,
     subscription_id text NOT NULL,
     client_id text NOT NULL,
     event text NOT NULL,
     body text NOT NULL,
     status text NOT NULL,
     attempt_count integer NOT NULL,
     redelivery_of text,
     scheduled boolean NOT NULL,
     created_at timestamptz NOT NULL,
     updated_at timestamptz NOT NULL
   );
   CREATE INDEX wh_notifications_unscheduled_idx ON wh_notifications (created_at) WHERE NOT scheduled;
   CREATE INDEX wh_notifications_subscription_idx ON wh_notifications (subscription_id, created_at DESC, id DESC);
   CREATE TABLE wh_idempotency_keys (
     client_id text NOT NULL,
     key text NOT NULL,
     notification_ids text[] NOT NULL,
     created_at timestamptz NOT NULL,
     PRIMARY KEY (client_id, key)
   );
   CREATE TABLE wh_delivery_attempts (
     id bigserial PRIMARY KEY,
     notification_id text NOT NULL REFERENCES wh_notifications (id) ON DELETE CASCADE,
     attempt integer NOT NULL,
     started_at timestamptz NOT NULL,
     duration_ms integer NOT NULL,
     status_code integer,
     response_body text,
     error text,
     succeeded boolean NOT NULL
   );
   CREATE INDEX wh_delivery_attempts_notification_idx ON wh_delivery_attempts (notification_id, id);`,
  // Room on each page for the status update every attempt makes: it then stays a HOT update,
  // with no new index entries (pages filled to the brim made ~40 % of them cold). New pages only.
  "ALTER TABLE wh_notifications SET (fillfactor = 80)",
  // Subscriptions from before signing schemes sign as the specification says.
  "ALTER TABLE wh_subscriptions ADD COLUMN signature_scheme text NOT NULL DEFAULT 'RSA_SHA256'",
  // Each pending notification's next attempt, as Agenda runs it: one row per notification (its id is the
  // job id), inserted with it and deleted once it is delivered or has failed for good. Due jobs are read in
  // (next_run_at, id) order, the lock rule's (delivery/fairness/budgets.ts). Older versions made the table
  // outside the migrations, hence IF NOT EXISTS. fail_count and the other Agenda-era columns are no longer
  // written.
  `CREATE TABLE IF NOT EXISTS wh_delivery_jobs (
     id text PRIMARY KEY REFERENCES wh_notifications (id) ON DELETE CASCADE,
     endpoint text NOT NULL,
     client_id text NOT NULL,
     next_run_at timestamptz,
     locked_at timestamptz,
     locked_by text,
     last_run_at timestamptz,
     last_finished_at timestamptz,
     fail_count integer NOT NULL DEFAULT 0,
     fail_reason text,
     failed_at timestamptz
   ) WITH (fillfactor = 70);
   ALTER TABLE wh_delivery_jobs ADD COLUMN IF NOT EXISTS trace_context text;
   CREATE INDEX IF NOT EXISTS wh_delivery_jobs_due_order_idx ON wh_delivery_jobs (next_run_at, id) WHERE locked_at IS NULL;
   DROP INDEX IF EXISTS wh_delivery_jobs_due_idx;
   CREATE INDEX IF NOT EXISTS wh_delivery_jobs_locked_idx ON wh_delivery_jobs (locked_at) WHERE locked_at IS NOT NULL;`,
  // Each client's own limits (NULL: the service's), and the retention purge's way through each client's
  // notifications, oldest first (notifications.ts). created_at never changes: status updates stay HOT.
  `ALTER TABLE wh_clients ADD COLUMN retention_ms bigint, ADD COLUMN max_subscriptions integer;
   CREATE INDEX wh_notifications_client_created_idx ON wh_notifications (client_id, created_at, id);`,
  // Throttling (delivery/fairness/throttle.ts): a subscription's limit (null: none); each throttled
  // subscription's next free slot to hand a waiting job and the earliest its next request may go out,
  // shared by every instance; and the slot a job waits for. Operational events (domain/operational-events.ts):
  // the failure streak and the rotation deadline its client was told of.
  `ALTER TABLE wh_subscriptions ADD COLUMN rate_limit_per_second integer;
   ALTER TABLE wh_subscriptions ADD COLUMN failing_noticed_at timestamptz;
   ALTER TABLE wh_subscriptions ADD COLUMN rotation_noticed_for timestamptz;
   CREATE INDEX wh_subscriptions_rotation_idx ON wh_subscriptions (rotation_deadline) WHERE rotation_deadline IS NOT NULL;
   ALTER TABLE wh_delivery_jobs ADD COLUMN throttle_slot_at timestamptz;
   CREATE TABLE wh_throttle_slots (
     subscription_id text PRIMARY KEY REFERENCES wh_subscriptions (id) ON DELETE CASCADE,
     next_at timestamptz NOT NULL,
     send_at timestamptz
   );`,
  // A subscription's custom headers, sealed (domain/custom-headers.ts), and its payload filter
  // (domain/payload-filter.ts); null: none.
  "ALTER TABLE wh_subscriptions ADD COLUMN sealed_headers text, ADD COLUMN payload_filter jsonb",
  // A temporary relay subscription's lease (domain/relay-leases.ts); null on every other subscription.
  `ALTER TABLE wh_subscriptions ADD COLUMN lease_expires_at timestamptz;
   CREATE INDEX wh_subscriptions_lease_idx ON wh_subscriptions (lease_expires_at) WHERE lease_expires_at IS NOT NULL;`,
  // A client's lifecycle (domain/client-access.ts), polled by each instance through the partial index,: disabled with a reason, or deleted and being purged in
  // batches (then it is gone); each API key's name, and when it was last used (written about once a minute).
  `ALTER TABLE wh_clients ADD COLUMN disabled_at timestamptz, ADD COLUMN disabled_reason text, ADD COLUMN deleted_at timestamptz;
   CREATE INDEX wh_clients_barred_idx ON wh_clients (id) WHERE disabled_at IS NOT NULL OR deleted_at IS NOT NULL;
   ALTER TABLE wh_api_keys ADD COLUMN name text NOT NULL DEFAULT '', ADD COLUMN last_used_at timestamptz;`,
  // Delivery statistics (domain/delivery-stats.ts, written by job-statements.ts): per endpoint, a row per minute and
  // per hour (step, in seconds) for each writer (one instance's accepting, or its attempts), so that no two statements
  // that run together wait for one row; once a step is over, its rows are merged into one of writer '' (the partial
  // index finds those left to merge). le_N counts the attempts that took at most N ms. Counts are updated in place:
  // HOT updates need room on the page. And the subscriptions in a failure streak, for the endpoints' "failing since".
  `CREATE TABLE wh_delivery_stats (
     step integer NOT NULL,
     start timestamptz NOT NULL,
     endpoint text NOT NULL,
     writer text NOT NULL,
     client_id text NOT NULL,
     accepted bigint NOT NULL DEFAULT 0,
     delivered bigint NOT NULL DEFAULT 0,
     failed bigint NOT NULL DEFAULT 0,
     attempts bigint NOT NULL DEFAULT 0,
     failed_attempts bigint NOT NULL DEFAULT 0,
     le_5 bigint NOT NULL DEFAULT 0, le_10 bigint NOT NULL DEFAULT 0, le_25 bigint NOT NULL DEFAULT 0,
     le_50 bigint NOT NULL DEFAULT 0, le_100 bigint NOT NULL DEFAULT 0, le_250 bigint NOT NULL DEFAULT 0,
     le_500 bigint NOT NULL DEFAULT 0, le_1000 bigint NOT NULL DEFAULT 0, le_2500 bigint NOT NULL DEFAULT 0,
     le_5000 bigint NOT NULL DEFAULT 0, le_10000 bigint NOT NULL DEFAULT 0, le_15000 bigint NOT NULL DEFAULT 0,
     le_30000 bigint NOT NULL DEFAULT 0, le_60000 bigint NOT NULL DEFAULT 0,
     PRIMARY KEY (step, start, endpoint, writer)
   ) WITH (fillfactor = 50);
   CREATE INDEX wh_delivery_stats_client_idx ON wh_delivery_stats (client_id, step, start);
   CREATE INDEX wh_delivery_stats_unmerged_idx ON wh_delivery_stats (step, start) WHERE writer <> '';
   CREATE INDEX wh_subscriptions_failing_idx ON wh_subscriptions (client_id) WHERE failing_since IS NOT NULL;`,
  // The retention purge's way through each client's idempotency keys, oldest first (notifications.ts).
  "CREATE INDEX wh_idempotency_keys_client_created_idx ON wh_idempotency_keys (client_id, created_at)",
];

/** Brings the schema up to date; `migrations` other than all of them only to build an older schema in a test. */
export async function migrate(pool: SqlPool, migrations = MIGRATIONS): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS wh_schema_version (version integer NOT NULL)");
    const { rows } = await client.query<{ version: number }>("SELECT max(version) AS version FROM wh_schema_version");
    const current = rows[0]?.version ?? 0;
    for (let version = current + 1; version <= migrations.length; version++) {
      await client.query(migrations[version - 1] as string);
      await client.query("INSERT INTO wh_schema_version (version) VALUES ($1)", [version]);
    }
  });
}
