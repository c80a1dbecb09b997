import type { TestFn } from "ava";
import { DeliveryStats, LATENCY_BOUNDS_MS, MIN_HOUR_ROWS_KEPT_MS } from "../../src/domain/delivery-stats.js";
import { endpointOf } from "../../src/domain/endpoint.js";
import { newId } from "../../src/domain/ids.js";
import type { DeliveryAttempt, Notification, Subscription } from "../../src/domain/model.js";
import { RetentionPurge } from "../../src/domain/retention.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";
import { type ContractStore, recordThroughJob } from "./store-contract.js";

/**
 * Times in years no other test writes, one for each test, so that these rows are the only ones in range and a
 * purge deletes no other test's (the contract's tests share a store).
 */
const at = (minute: number, second = 0) => new Date(Date.UTC(2001, 1, 3, 4, minute, second));
const purgedAt = (minute: number) => new Date(Date.UTC(1999, 1, 3, 4, minute));

function notificationOf(subscription: Subscription, createdAt: Date): Notification {
  return {
    id: newId("ntf"),
    subscriptionId: subscription.id,
    clientId: subscription.clientId,
    event: subscription.event,
    body: "{}",
    status: "pending",
    attemptCount: 0,
    createdAt,
    updatedAt: createdAt,
  };
}

function attemptOf(notification: Notification, attempt: number, startedAt: Date, durationMs: number, succeeded: boolean): DeliveryAttempt {
  return {
    notificationId: notification.id,
    attempt,
    startedAt,
    durationMs,
    succeeded,
    ...(succeeded ? { statusCode: 200 } : { statusCode: 500 }),
  };
}

/** Cumulative histogram counts for these durations (LATENCY_BOUNDS_MS). */
const atMost = (...durations: number[]) => LATENCY_BOUNDS_MS.map((bound) => durations.filter((d) => d <= bound).length);

/** The statistics' store contract: what the job store counts as it writes, read back and purged (run by store.test.ts). */
export function statsContract(test: TestFn, name: string, open: () => Promise<ContractStore>): void {
  test(`${name}: the job store counts accepted notifications and attempts per endpoint, minute and hour`, async (t) => {
    const store = await open();
    const { clients, subscriptions, jobs, stats } = store;
    const client = await clients.ensureWithKey("stats", newId("cli"));
    const fast = subscriptionRecord(client.id, { url: "https://fast.example/hook" });
    const flaky = subscriptionRecord(client.id, { url: "https://flaky.example:8443/hook" });
    for (const subscription of [fast, flaky]) await subscriptions.insert(subscription);
    const [a, b] = [notificationOf(fast, at(5, 1)), notificationOf(fast, at(5, 2))];
    const c = notificationOf(flaky, at(6, 3));
    await jobs.insert(
      [a, b, c].map((notification) => ({
        notification,
        endpoint: endpointOf(client.id, notification === c ? flaky.url : fast.url),
      })),
    );
    t.is(await stats.pending(client.id), 3);

    await recordThroughJob(jobs, attemptOf(a, 0, at(5, 10), 20, true), "delivered");
    await recordThroughJob(jobs, attemptOf(b, 0, at(5, 11), 300, false), "pending");
    await recordThroughJob(jobs, attemptOf(b, 1, at(7, 0), 40, true), "delivered");
    await recordThroughJob(jobs, attemptOf(c, 0, at(7, 30), 6000, false), "pending");
    t.is(await stats.pending(client.id), 1);
    await recordThroughJob(jobs, attemptOf(c, 1, at(7, 40), 70000, false), "failed");
    t.is(await stats.pending(client.id), 0);

    const minutes = { step: "minute", from: at(0), to: at(60), clientId: client.id } as const;
    const read = await stats.read(minutes);
    const counts = (accepted: number, delivered: number, failed: number, durations: number[], failedAttempts: number) => ({
      accepted,
      delivered,
      failed,
      attempts: durations.length,
      failedAttempts,
      latencyAtMost: atMost(...durations),
    });
    t.deepEqual(
      read.steps.sort((x, y) => x.start.getTime() - y.start.getTime()),
      [
        { start: at(5), ...counts(2, 1, 0, [20, 300], 1) },
        { start: at(6), ...counts(1, 0, 0, [], 0) },
        { start: at(7), ...counts(0, 1, 1, [40, 6000, 70000], 2) },
      ],
    );
    const attempts = (durations: number[], failedAttempts: number) => ({
      attempts: durations.length,
      failedAttempts,
      latencyAtMost: atMost(...durations),
    });
    const fastEndpoint = endpointOf(client.id, fast.url);
    const flakyEndpoint = endpointOf(client.id, flaky.url);
    /** One figure per minute of the hour read: `at` those minutes, 0 at the others. */
    const perMinute = (at: Record<number, number>) => Array.from({ length: 60 }, (_, minute) => at[minute] ?? 0);
    t.deepEqual(
      read.endpoints.sort((x, y) => x.endpoint.localeCompare(y.endpoint)),
      [
        {
          endpoint: fastEndpoint,
          clientId: client.id,
          ...attempts([20, 300, 40], 1),
          attemptsPerStep: perMinute({ 5: 2, 7: 1 }),
          failedAttemptsPerStep: perMinute({ 5: 1 }),
        },
        {
          endpoint: flakyEndpoint,
          clientId: client.id,
          ...attempts([6000, 70000], 2),
          attemptsPerStep: perMinute({ 7: 2 }),
          failedAttemptsPerStep: perMinute({ 7: 2 }),
        },
      ].sort((x, y) => x.endpoint.localeCompare(y.endpoint)),
    );
    const hours = await stats.read({ ...minutes, step: "hour" });
    t.deepEqual(
      hours.steps.map((step) => [step.start.toISOString(), step.accepted, step.attempts]),
      [[at(0).toISOString(), 3, 5]],
    );
    t.deepEqual(await stats.read({ ...minutes, clientId: newId("cli") }), { steps: [], endpoints: [] }, "another client's are apart");

    // Merging the rows of steps that are over changes no figure.
    await stats.merge("minute", at(60));
    await stats.merge("hour", at(60));
    const sortedRead = async (step: "minute" | "hour") => {
      const again = await stats.read({ ...minutes, step });
      return {
        steps: again.steps.sort((x, y) => x.start.getTime() - y.start.getTime()),
        endpoints: again.endpoints.sort((x, y) => x.endpoint.localeCompare(y.endpoint)),
      };
    };
    t.deepEqual(await sortedRead("minute"), read);
    t.deepEqual((await sortedRead("hour")).steps, hours.steps);

    // The report over that hour: the flaky endpoint first, failing since its streak began.
    await subscriptions.markFailing(flaky.id, at(7, 30));
    const report = await new DeliveryStats(stats, clients, () => at(30)).report("1h", client.id);
    t.is(report.points.length, 60);
    t.like(report.totals, { accepted: 3, delivered: 2, failed: 1, attempts: 5, failedAttempts: 3 });
    t.deepEqual(
      report.endpoints.map((endpoint) => [endpoint.origin, endpoint.successRate, endpoint.failingSince?.toISOString()]),
      [
        ["https://flaky.example:8443", 0, at(7, 30).toISOString()],
        ["https://fast.example", 2 / 3, undefined],
      ],
    );
    t.is(report.endpoints[0]?.latencyP95Ms, 60000, "past the last bucket: its bound");
  });

  test(`${name}: the retention purge drops minute rows after a day and hour rows after a week`, async (t) => {
    const { clients, subscriptions, jobs, stats, notifications } = await open();
    const client = await clients.ensureWithKey("stats purge", newId("cli"));
    const subscription = subscriptionRecord(client.id, { url: "https://purged.example/hook" });
    await subscriptions.insert(subscription);
    const notification = notificationOf(subscription, purgedAt(1));
    await jobs.insert([{ notification, endpoint: endpointOf(client.id, subscription.url) }]);
    const query = { from: purgedAt(0), to: purgedAt(60), clientId: client.id };

    const round = (now: Date) =>
      new RetentionPurge({
        store: notifications,
        stats,
        clients,
        retentionMs: 60_000,
        observer: { purged: () => {}, oldestKept: () => {} },
        onError: (error) => t.fail(String(error)),
        now: () => now,
      }).round();
    await round(new Date(purgedAt(0).getTime() + 86_400_000 - 60_000));
    t.is((await stats.read({ ...query, step: "minute" })).steps.length, 1, "a minute row is kept for a day");
    await round(new Date(purgedAt(0).getTime() + 86_400_000 + 60_000 * 2));
    t.deepEqual((await stats.read({ ...query, step: "minute" })).steps, []);
    t.is((await stats.read({ ...query, step: "hour" })).steps.length, 1, "the hour row stays");
    await round(new Date(purgedAt(0).getTime() + MIN_HOUR_ROWS_KEPT_MS + 3_600_000 + 1));
    t.deepEqual((await stats.read({ ...query, step: "hour" })).steps, []);
  });
}
