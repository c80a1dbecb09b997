/**
 * How long each statement of the embedded store's VACUUM rounds takes
 * (PGlite runs one statement at a time: every other one waits for it):
 * `node --import tsx bench/embedded-vacuum.ts [--notifications=200000] [--purged=5]`.
 *
 * Opens an embedded store as the service does (EmbeddedPool with the
 * service's session settings, migrated), without its VACUUM timer, and
 * fills it with delivered notifications of one client over ten
 * subscriptions, each with one attempt and an idempotency key: rows as the
 * service writes them (the columns of job-statements.ts' INSERT and FINISH,
 * and of idempotency-keys.ts), written in bulk by SQL to spare the hour the
 * delivery path would take. A first VACUUM clears the new rows. Then, three times:
 * the retention purge (the store's own purgeEnded and purgeExpiredKeys, in
 * their batches) deletes the oldest `--purged` percent of what is left,
 * enough for VACUUM's index pass (more than 2 % of a table's pages hold
 * dead rows), and a round runs: twice a round of changed tables, then the
 * hourly round of every relation. Prints each round's statements, their
 * total and the slowest ones, in ms of wall time (a loaded machine adds the
 * wait for a core) and of this process's CPU time (PGlite runs in a thread
 * of it; the event loop is idle meanwhile).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IDEMPOTENCY_KEY_LIFETIME_MS, PURGE_BATCH } from "../src/domain/retention.js";
import { STABLE_PLANS } from "../src/store/open-store.js";
import { EmbeddedPool } from "../src/store/postgres/embedded-pool.js";
import { EVERY_RELATION_EVERY_ROUNDS, vacuumRound } from "../src/store/postgres/embedded-vacuum.js";
import { PostgresNotificationStore } from "../src/store/postgres/notifications.js";
import { migrate } from "../src/store/postgres/schema.js";

const option = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const total = option("notifications", 200_000);
const purgedPercent = option("purged", 5);
const FILL_CHUNK = 50_000;
const DAY = 86_400_000;
/** Each notification is created a second after the one before, the first this long ago. */
const first = Date.now() - 2 * DAY - total * 1000;
const createdAt = (index: number) => new Date(first + index * 1000);

const dataDir = await mkdtemp(join(tmpdir(), "wh-embedded-vacuum-"));
const pool = await EmbeddedPool.open(dataDir, STABLE_PLANS, (error) => console.error("embedded database failed:", error));
const notifications = new PostgresNotificationStore(pool);

async function fill(): Promise<void> {
  const at = new Date(first);
  await pool.query("INSERT INTO wh_clients (id, name, created_at) VALUES ('cli_bench', 'bench', $1)", [at]);
  await pool.query(
    `INSERT INTO wh_subscriptions (id, client_id, event, url, description, enabled, public_key_pem, private_key_pem, created_at, updated_at)
     SELECT 'sub_bench' || s, 'cli_bench', 'Bench.Vacuum', 'https://receiver.example/hook/' || s, '', true, 'pem', 'sealed', $1, $1
     FROM generate_series(0, 9) s`,
    [at],
  );
  for (let from = 0; from < total; from += FILL_CHUNK) {
    const to = Math.min(total, from + FILL_CHUNK) - 1;
    const rows = `SELECT i, 'ntf_' || md5('n' || i) AS id, to_timestamp(${first / 1000} + i) AS at FROM generate_series(${from}, ${to}) i`;
    await pool.query(
      `INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, redelivery_of, scheduled, created_at, updated_at)
       SELECT id, 'sub_bench' || (i % 10), 'cli_bench', 'Bench.Vacuum',
              json_build_object('Event', 'Bench.Vacuum', 'Timestamp', at, 'Payload', json_build_object('order', i, 'note', repeat('x', 200)))::text,
              'delivered', 1, NULL, true, at, at
       FROM (${rows}) r ORDER BY i`,
    );
    await pool.query(
      `INSERT INTO wh_delivery_attempts (notification_id, attempt, started_at, duration_ms, status_code, response_body, error, succeeded)
       SELECT id, 0, at, 12, 200, 'ok', NULL, true FROM (${rows}) r ORDER BY i`,
    );
    await pool.query(
      `INSERT INTO wh_idempotency_keys (client_id, key, notification_ids, created_at)
       SELECT 'cli_bench', 'order-' || i, ARRAY[id], at FROM (${rows}) r ORDER BY i`,
    );
  }
}

/** The retention purge, in its batches, of everything created before the `index`-th notification. */
async function purgeBefore(index: number): Promise<{ notifications: number; keys: number }> {
  // Retention one day, so "now" is a day after the cut.
  const now = new Date(createdAt(index).getTime() + DAY);
  let deletedNotifications = 0;
  for (;;) {
    const batch = await notifications.purgeEnded(now, DAY, PURGE_BATCH);
    deletedNotifications += batch.notifications;
    if (batch.notifications < PURGE_BATCH) break;
  }
  let keys = 0;
  for (;;) {
    const deleted = await notifications.purgeExpiredKeys(now, DAY, IDEMPOTENCY_KEY_LIFETIME_MS, PURGE_BATCH);
    keys += deleted;
    if (deleted < PURGE_BATCH) break;
  }
  return { notifications: deletedNotifications, keys };
}

/** Waits until the statistics (flushed about once a second) count the dead rows the purge left in the notifications. */
async function deadRowsCounted(expected: number): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ dead: number }>(
      "SELECT coalesce(sum(n_dead_tup), 0)::int AS dead FROM pg_stat_user_tables WHERE relname LIKE 'wh_notifications%'",
    );
    if ((rows[0]?.dead ?? 0) >= expected) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs round `round`, timing each statement; prints the round's figures. */
async function timedRound(what: string, round: number): Promise<void> {
  const times: Array<{ text: string; wall: number; cpu: number }> = [];
  await vacuumRound(async (text) => {
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const result = await pool.query(text);
    const cpu = process.cpuUsage(cpuBefore);
    times.push({ text: text.replace(/\s+/g, " ").trim(), wall: performance.now() - started, cpu: (cpu.user + cpu.system) / 1000 });
    return result;
  }, round);
  const sum = (pick: (time: (typeof times)[number]) => number) => times.reduce((a, b) => a + pick(b), 0).toFixed(0);
  const slowest = [...times].sort((a, b) => b.cpu - a.cpu).slice(0, 4);
  console.log(
    `${what} (round ${round}): ${times.length} statements, ${sum((t) => t.wall)} ms wall, ${sum((t) => t.cpu)} ms CPU in all; slowest (wall / CPU ms):`,
  );
  for (const { text, wall, cpu } of slowest)
    console.log(`  ${wall.toFixed(1).padStart(7)} / ${cpu.toFixed(1).padStart(7)}  ${text.slice(0, 90)}`);
}

async function sizes(): Promise<string> {
  const { rows } = await pool.query<{ name: string; mb: string }>(
    `SELECT t AS name, (pg_total_relation_size(c.oid) / 1048576.0)::numeric(8, 1)::text AS mb
     FROM unnest(ARRAY['wh_notifications', 'wh_delivery_attempts', 'wh_idempotency_keys']) t
     LEFT JOIN pg_partition_tree(t::regclass) p ON true JOIN pg_class c ON c.oid = coalesce(p.relid, t::regclass)
     WHERE c.relkind = 'r'`,
  );
  const total = new Map<string, number>();
  for (const row of rows) total.set(row.name, (total.get(row.name) ?? 0) + Number(row.mb));
  return [...total].map(([name, mb]) => `${name} ${mb.toFixed(0)} MB`).join(", ");
}

try {
  await migrate(pool);
  let started = performance.now();
  await fill();
  console.log(
    `${total} notifications, attempts and keys written in ${((performance.now() - started) / 1000).toFixed(0)} s: ${await sizes()}`,
  );
  started = performance.now();
  await pool.query("VACUUM");
  console.log(`the new rows vacuumed in ${(performance.now() - started).toFixed(0)} ms (one whole-database VACUUM, not timed further)`);
  const share = Math.floor((total * purgedPercent) / 100);
  const rounds = [
    ["changed tables", 1],
    ["changed tables", 2],
    ["every relation", EVERY_RELATION_EVERY_ROUNDS],
  ] as const;
  for (const [index, [what, round]] of rounds.entries()) {
    const cut = (index + 1) * share;
    started = performance.now();
    const purged = await purgeBefore(cut);
    console.log(
      `purged ${purged.notifications} notifications and ${purged.keys} keys (the oldest ${purgedPercent} % of the ${total - cut + share} left) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    await deadRowsCounted(purged.notifications);
    await timedRound(what, round);
  }
} finally {
  await pool.end();
  await rm(dataDir, { recursive: true, force: true });
}
