import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import {
  DeliveryService,
  GetClientDeliveryStatsRequestSchema,
  GetClientDeliveryStatsResponseSchema,
} from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { EventService, GetDeliveryStatsRequestSchema, GetDeliveryStatsResponseSchema } from "../../src/gen/webhooks/v1/event_service_pb.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { grpcCall } from "../helpers/grpc.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, rest, startTestService, type TestService } from "../helpers/service.js";
import { sharedTargets, storeTargets, testOn } from "../helpers/stores.js";

interface Point {
  accepted?: string;
  delivered?: string;
  failed?: string;
  attempts?: string;
  failedAttempts?: string;
  latencyP95Ms?: number;
}
interface Endpoint {
  clientId: string;
  origin: string;
  attempts?: string;
  failedAttempts?: string;
  successRate?: number;
  latencyP95Ms?: number;
  failingSince?: string;
  attemptsPerStep: string[];
}
interface Stats {
  range: string;
  stepSeconds: number;
  points: Point[];
  totals: Point;
  pending?: string;
  endpoints: Endpoint[];
}

/** Polls `check` every 100 ms until it holds, for up to `timeoutMs`. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const count = (value: string | undefined) => Number(value ?? 0);
const originOf = (url: string) => new URL(url).origin;

async function stats(base: string, path: string, auth: Record<string, string>): Promise<Stats> {
  const answer = await rest(base, "GET", path, undefined, auth);
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.text}`);
  return answer.json.stats as unknown as Stats;
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: delivery figures come from the store, per endpoint and per client, over REST and gRPC, and outlive a restart`,
    async (t) => {
      const store = await target.create();
      let running: TestService | undefined = await startTestService(store.env);
      const ok = await Receiver.start();
      const slow = await Receiver.start(() => ({ status: 200, delayMs: 400 }));
      const failing = await Receiver.start(() => ({ status: 500 }));
      t.teardown(async () => {
        await running?.service.stop();
        await Promise.all([ok.close(), slow.close(), failing.close()]);
        await store.cleanup();
      });
      let base = running.baseUrl;
      for (const name of ["Stats.Fast", "Stats.Failing", "Stats.Slow"]) {
        t.is((await rest(base, "POST", "/api/internal/eventTypes", { name, description: "a test event" }, adminAuth)).status, 200);
      }
      const first = await createClient(base, "Stats one");
      const second = await createClient(base, "Stats two");
      for (const [auth, event, url] of [
        [first.auth, "Stats.Fast", ok.url],
        [first.auth, "Stats.Failing", failing.url],
        [second.auth, "Stats.Slow", slow.url],
      ] as const) {
        const created = await rest(base, "POST", "/api/webhookSubscription", { event, url }, auth);
        t.is(created.status, 200, created.text);
      }
      const publish = async (clientId: string, event: string, times: number) => {
        for (let i = 0; i < times; i++) {
          const published = await rest(base, "POST", "/api/internal/events/publish", { clientId, event, payload: {} }, adminAuth);
          t.is(published.status, 200, published.text);
        }
      };
      await publish(first.id, "Stats.Fast", 3);
      await publish(first.id, "Stats.Failing", 1);
      await publish(second.id, "Stats.Slow", 2);

      // 3 + 2 delivered at once; the failing one fails 6 attempts (RETRY_SCHEDULE: 5 retries), then for good.
      const expected = { accepted: 6, delivered: 5, failed: 1, attempts: 11, failedAttempts: 6 };
      const totalsOf = (s: Stats) => ({
        accepted: count(s.totals.accepted),
        delivered: count(s.totals.delivered),
        failed: count(s.totals.failed),
        attempts: count(s.totals.attempts),
        failedAttempts: count(s.totals.failedAttempts),
      });
      let operator = await stats(base, "/api/internal/stats?range=1h", adminAuth);
      await until(async () => {
        operator = await stats(base, "/api/internal/stats?range=1h", adminAuth);
        // On MongoDB a job is removed just after its last attempt is recorded (two writes): pending too.
        return totalsOf(operator).failed === 1 && totalsOf(operator).delivered === 5 && count(operator.pending) === 0;
      }, "every notification to end");
      t.deepEqual(totalsOf(operator), expected);
      t.is(operator.range, "1h");
      t.is(operator.stepSeconds, 60);
      t.is(operator.points.length, 60);
      t.is(
        operator.points.reduce((sum, point) => sum + count(point.attempts), 0),
        11,
        "the points add up to the totals",
      );

      // Worst first: the failing endpoint (no success), then the slow one, then the fast one.
      t.deepEqual(
        operator.endpoints.map((endpoint) => [endpoint.clientId, endpoint.origin]),
        [
          [first.id, originOf(failing.url)],
          [second.id, originOf(slow.url)],
          [first.id, originOf(ok.url)],
        ],
      );
      const [failingEndpoint, slowEndpoint, okEndpoint] = operator.endpoints as [Endpoint, Endpoint, Endpoint];
      t.is(failingEndpoint.successRate ?? 0, 0);
      t.is(count(failingEndpoint.attempts), 6);
      t.truthy(failingEndpoint.failingSince, "a failing endpoint says since when");
      t.is(slowEndpoint.successRate, 1);
      t.true((slowEndpoint.latencyP95Ms ?? 0) >= 250, `slow p95 ${slowEndpoint.latencyP95Ms}`);
      t.true((okEndpoint.latencyP95Ms ?? 0) < (slowEndpoint.latencyP95Ms ?? 0));
      t.is(okEndpoint.failingSince, undefined);
      t.is(
        okEndpoint.attemptsPerStep.reduce((sum, n) => sum + Number(n), 0),
        3,
      );

      // A client sees its own endpoints only, as the operator sees that client.
      const own = await stats(base, "/api/webhookSubscription/stats", first.auth);
      t.deepEqual(
        own.endpoints.map((endpoint) => endpoint.origin),
        [originOf(failing.url), originOf(ok.url)],
      );
      t.is(count(own.totals.accepted), 4);
      const asOperator = await stats(base, `/api/internal/stats?clientId=${first.id}`, adminAuth);
      t.deepEqual(totalsOf(asOperator), totalsOf(own));

      // Bad input.
      const badRange = await rest(base, "GET", "/api/internal/stats?range=2h", undefined, adminAuth);
      t.is(badRange.status, 400);
      t.is(badRange.json.code, "invalid_argument");
      t.regex(String(badRange.json.message), /range must be one of 1h, 24h, 7d/);
      const unknown = await rest(base, "GET", "/api/internal/stats?clientId=cli_nobody", undefined, adminAuth);
      t.is(unknown.status, 404, unknown.text);
      t.is((await rest(base, "GET", "/api/internal/stats", undefined, first.auth)).status, 401, "a client key is no admin token");

      // Over gRPC, a day per hour.
      const day = await grpcCall(
        running.service.port,
        EventService,
        "GetDeliveryStats",
        GetDeliveryStatsRequestSchema,
        GetDeliveryStatsResponseSchema,
        { range: "24h" },
        ADMIN_TOKEN,
      );
      t.is(day.stats?.stepSeconds, 3600);
      t.is(day.stats?.points.length, 24);
      t.is(day.stats?.totals?.attempts, 11n);
      const secondOwn = await grpcCall(
        running.service.port,
        DeliveryService,
        "GetClientDeliveryStats",
        GetClientDeliveryStatsRequestSchema,
        GetClientDeliveryStatsResponseSchema,
        { range: "7d" },
        second.key,
      );
      t.is(secondOwn.stats?.points.length, 168);
      t.is(secondOwn.stats?.totals?.delivered, 2n);
      t.deepEqual(
        secondOwn.stats?.endpoints.map((endpoint) => endpoint.origin),
        [originOf(slow.url)],
      );
      const refused = await t.throwsAsync(
        grpcCall(
          running.service.port,
          DeliveryService,
          "GetClientDeliveryStats",
          GetClientDeliveryStatsRequestSchema,
          GetClientDeliveryStatsResponseSchema,
          { range: "1y" },
          second.key,
        ),
      );
      t.is((refused as grpc.ServiceError).code, grpc.status.INVALID_ARGUMENT);

      // A new instance on the same store reads the same figures.
      await running.service.stop();
      running = undefined;
      running = await startTestService(store.env);
      base = running.baseUrl;
      t.deepEqual(totalsOf(await stats(base, "/api/internal/stats?range=1h", adminAuth)), expected);
    },
  );
}

for (const target of sharedTargets(test, "two instances on one database count together")) {
  test(`${target.name}: two instances on one database count together`, async (t) => {
    const store = await target.create();
    const first = await startTestService(store.env);
    const second = await startTestService(store.env);
    const receiver = await Receiver.start();
    t.teardown(async () => {
      await Promise.all([first.service.stop(), second.service.stop()]);
      await receiver.close();
      await store.cleanup();
    });
    t.is(
      (await rest(first.baseUrl, "POST", "/api/internal/eventTypes", { name: "Stats.Shared", description: "a test event" }, adminAuth))
        .status,
      200,
    );
    const client = await createClient(first.baseUrl, "Stats shared");
    const subscribed = await rest(
      second.baseUrl,
      "POST",
      "/api/webhookSubscription",
      { event: "Stats.Shared", url: receiver.url },
      client.auth,
    );
    t.is(subscribed.status, 200, subscribed.text);
    for (const [service, times] of [
      [first, 2],
      [second, 3],
    ] as const) {
      for (let i = 0; i < times; i++) {
        const body = { clientId: client.id, event: "Stats.Shared", payload: {} };
        t.is((await rest(service.baseUrl, "POST", "/api/internal/events/publish", body, adminAuth)).status, 200);
      }
    }
    for (const service of [first, second]) {
      await until(async () => {
        const own = await stats(service.baseUrl, "/api/webhookSubscription/stats", client.auth);
        return count(own.totals.accepted) === 5 && count(own.totals.delivered) === 5;
      }, "both instances' notifications in either instance's figures");
      const operator = await stats(service.baseUrl, `/api/internal/stats?clientId=${client.id}`, adminAuth);
      t.is(count(operator.totals.attempts), 5, "each attempt counted once");
    }
  });
}
