/**
 * How long each retention purge statement takes on the embedded store
 * (PGlite), whose one session runs every statement of the service in turn:
 * `node --import tsx bench/purge-statements.ts [--notifications=200000]`.
 *
 * Fills a new embedded store through the store API, as the service fills it
 * (each notification published with an idempotency key, its job locked and
 * finished with one attempt, all two days old), plus a client of a tenth as
 * many that is then deleted; then times every batch of the purges a
 * retention round runs (RetentionPurge): ended notifications past a
 * retention of a day, idempotency keys past theirs, and the deleted
 * client's data. Prints each purge's batches, median, p99 and max in ms,
 * of wall time and of CPU time.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { loadConfig } from "../src/config.js";
import type { NewDelivery } from "../src/delivery/job-store.js";
import { endpointOf } from "../src/domain/endpoint.js";
import { newId } from "../src/domain/ids.js";
import type { Notification } from "../src/domain/model.js";
import { IDEMPOTENCY_KEY_LIFETIME_MS, PURGE_BATCH } from "../src/domain/retention.js";
import { openJobs } from "../src/store/open-jobs.js";
import { openStore } from "../src/store/open-store.js";
import { percentile } from "./stats.js";

const DAY = 86_400_000;
const total = Number(process.argv.find((a) => a.startsWith("--notifications="))?.slice(16) ?? 200_000);
const FILL_BATCH = 500;

const dataDir = await mkdtemp(join(tmpdir(), "wh-purge-statements-"));
const opened = await openStore(loadConfig({ DATA_DIR: dataDir }).store, pino({ level: "silent" }));
const { jobs } = openJobs(opened.database, { owner: "purge-statements", lockLifetimeMs: 60_000 });
await jobs.prepare();
const { clients, subscriptions, notifications } = opened.store;
const twoDaysAgo = Date.now() - 2 * DAY;

/** `count` notifications of a new client, each published with a key and delivered at its one attempt; the client's id. */
async function fill(name: string, count: number): Promise<string> {
  const client = await clients.ensureWithKey(name, randomUUID());
  const at = new Date(twoDaysAgo);
  const subscription = {
    id: newId("sub"),
    clientId: client.id,
    event: "Bench.Purge",
    url: "https://receiver.example/hook",
    description: "",
    enabled: true,
    signatureScheme: "RSA_SHA256" as const,
    publicKeyPem: "pem",
    privateKeyPem: "sealed",
    createdAt: at,
    updatedAt: at,
  };
  await subscriptions.insert(subscription);
  for (let done = 0; done < count; done += FILL_BATCH) {
    const batch: NewDelivery[] = [];
    for (let i = done; i < Math.min(count, done + FILL_BATCH); i++) {
      const createdAt = new Date(twoDaysAgo + i);
      const notification: Notification = {
        id: newId("ntf"),
        subscriptionId: subscription.id,
        clientId: client.id,
        event: subscription.event,
        body: JSON.stringify({ Event: "Bench.Purge", Timestamp: createdAt.toISOString(), Payload: { order: i, note: "x".repeat(200) } }),
        status: "pending",
        attemptCount: 0,
        createdAt,
        updatedAt: createdAt,
      };
      batch.push({ notification, endpoint: endpointOf(client.id, subscription.url) });
    }
    await jobs.insertBatch(batch.map((delivery, i) => ({ clientId: client.id, key: `order-${done + i}`, deliveries: [delivery] })));
    for (let left = batch.length; left > 0; ) {
      const { jobs: locked } = await jobs.lockDue({
        limit: FILL_BATCH,
        endpointBudgets: new Map(),
        clientBudgets: new Map(),
        defaultPerEndpoint: FILL_BATCH,
        defaultPerClient: FILL_BATCH,
      });
      await Promise.all(
        locked.map((job) =>
          jobs.finish({
            id: job.id,
            heldLock: job.lockedAt,
            status: "delivered",
            attempt: {
              notificationId: job.id,
              attempt: 0,
              startedAt: new Date(twoDaysAgo),
              durationMs: 12,
              statusCode: 200,
              responseBody: "ok",
              succeeded: true,
            },
          }),
        ),
      );
      left -= locked.length;
    }
    if ((done / FILL_BATCH) % 40 === 0) console.error(`  ${name}: ${done + batch.length} of ${count} (${new Date().toISOString()})`);
  }
  return client.id;
}

/**
 * Runs `batch` until it deletes fewer than PURGE_BATCH rows; each run's wall
 * time, and the CPU time of this process (PGlite runs in a thread of it)
 * meanwhile, in ms: on a loaded machine the wall time also counts waiting
 * for a core, and both count a VACUUM round the statement queued behind.
 */
async function timed(batch: () => Promise<number>): Promise<{ wall: number[]; cpu: number[] }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (;;) {
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const deleted = await batch();
    const used = process.cpuUsage(cpuBefore);
    wall.push(performance.now() - started);
    cpu.push((used.user + used.system) / 1000);
    if (deleted < PURGE_BATCH) return { wall, cpu };
  }
}

/** The first run apart: it prepares the statement (parse and plan, once per session). */
function summary(what: string, times: { wall: number[]; cpu: number[] }): void {
  const ms = (value: number) => value.toFixed(1);
  const line = (values: number[]) => {
    const [first = 0, ...rest] = values;
    const sorted = rest.sort((a, b) => a - b);
    return `the first ${ms(first)} ms, the others median ${ms(percentile(sorted, 50))} ms, p99 ${ms(percentile(sorted, 99))} ms, max ${ms(sorted.at(-1) ?? 0)} ms`;
  };
  console.log(`${what}: ${times.wall.length} statements
  wall: ${line(times.wall)}
  CPU:  ${line(times.cpu)}`);
}

try {
  console.error(`filling an embedded store with ${total} delivered notifications, and ${total / 10} of a client to delete`);
  await fill("kept", total);
  const deletedId = await fill("deleted", total / 10);
  const now = new Date();
  // First: the purge of ended notifications would otherwise take this client's too.
  await clients.markDeleted(deletedId, new Date());
  summary(
    `deleted client's data (${total / 10} notifications)`,
    await timed(async () => {
      const batch = await clients.purgeDeleted(PURGE_BATCH);
      return batch.notifications + batch.others > 0 ? PURGE_BATCH : 0;
    }),
  );
  summary(
    `ended notifications (${total}, retention 1 day)`,
    await timed(async () => (await notifications.purgeEnded(now, DAY, PURGE_BATCH)).notifications),
  );
  summary(
    `idempotency keys (${total}, lifetime 1 day)`,
    await timed(() => notifications.purgeExpiredKeys(new Date(now.getTime() + DAY), 30 * DAY, IDEMPOTENCY_KEY_LIFETIME_MS, PURGE_BATCH)),
  );
} finally {
  await opened.close();
  await rm(dataDir, { recursive: true, force: true });
}
