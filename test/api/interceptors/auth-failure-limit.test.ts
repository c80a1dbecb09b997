import { request } from "node:http";
import { status as grpcStatus } from "@grpc/grpc-js";
import test from "ava";
import { AuthFailureLimiter, sourceOf } from "../../../src/api/interceptors/auth-failure-limit.js";
import {
  ListEventsRequestSchema,
  ListEventsResponseSchema,
  SubscriptionService,
} from "../../../src/gen/webhooks/v1/subscription_service_pb.js";
import { grpcCall } from "../../helpers/grpc.js";
import { API_KEY, sharedService } from "../../helpers/service.js";

// The limiter alone, on a fake clock: every transition of a source.

test("UNTRACKED → COUNTING → LOCKED_OUT → COUNTING → UNTRACKED", (t) => {
  let now = 0;
  const limiter = new AuthFailureLimiter(3, () => now);
  t.is(limiter.retryAfterSeconds("192.0.2.1"), 0, "untracked: may try");
  limiter.recordFailure("192.0.2.1");
  limiter.recordFailure("192.0.2.1");
  t.is(limiter.retryAfterSeconds("192.0.2.1"), 0, "counting: one try left");
  limiter.recordFailure("192.0.2.1");
  t.is(limiter.retryAfterSeconds("192.0.2.1"), 20, "locked out: one token comes back in 60/3 s");
  t.is(limiter.retryAfterSeconds("192.0.2.2"), 0, "another address is unaffected");
  now += 10_000;
  t.is(limiter.retryAfterSeconds("192.0.2.1"), 10);
  now += 10_000;
  t.is(limiter.retryAfterSeconds("192.0.2.1"), 0, "counting again with one token");
  limiter.recordFailure("192.0.2.1");
  t.is(limiter.retryAfterSeconds("192.0.2.1"), 20, "and locked out by the next failure");
  now += 60_000;
  t.is(limiter.retryAfterSeconds("192.0.2.1"), 0);
  t.is(limiter.trackedSources, 0, "a full bucket is forgotten");
});

test("memory is bounded: past the limit the source that failed longest ago is forgotten", (t) => {
  const limiter = new AuthFailureLimiter(1, () => 0, 3);
  for (const address of ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1", "10.0.0.4"]) limiter.recordFailure(address);
  t.is(limiter.trackedSources, 3);
  t.is(limiter.retryAfterSeconds("10.0.0.2"), 0, "the oldest was forgotten");
  t.true(limiter.retryAfterSeconds("10.0.0.1") > 0, "a recent failure moved 10.0.0.1 to the back");
});

test("sources: IPv4 (also mapped into IPv6) as is, IPv6 by its /64", (t) => {
  t.is(sourceOf("203.0.113.7"), "203.0.113.7");
  t.is(sourceOf("::ffff:203.0.113.7"), "203.0.113.7");
  t.is(sourceOf("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  t.is(sourceOf("2001:db8:1:2:bbbb::9"), "2001:db8:1:2::/64");
  const limiter = new AuthFailureLimiter(1, () => 0);
  limiter.recordFailure("2001:db8:1:2::1");
  t.true(limiter.retryAfterSeconds("2001:db8:1:2::ffff") > 0, "the whole /64 is one source");
});

// The service over real HTTP and gRPC, with a budget of 5 failures a minute.

const running = sharedService(test, { AUTH_FAILURES_PER_MINUTE: "5" });

/** A GET from a chosen loopback source address (every 127/8 address is this machine's). */
function getFrom(localAddress: string, authorization: string): Promise<{ status: number; retryAfter?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${running.baseUrl}/api/webhookSubscription/events`, { localAddress, headers: { authorization } }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body, ...(res.headers["retry-after"] ? { retryAfter: res.headers["retry-after"] } : {}) }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

test.serial(
  "wrong keys from one address: 401 within the budget, then 429 with Retry-After, a valid key too; other addresses unaffected",
  async (t) => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await getFrom("127.0.0.1", `Bearer wrong-key-${i}`)).status);
    t.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
    const limited = await getFrom("127.0.0.1", `Bearer ${API_KEY}`);
    t.is(limited.status, 429, "a valid key from the locked-out address waits too");
    const retryAfter = Number(limited.retryAfter);
    t.true(retryAfter >= 1 && retryAfter <= 12, `Retry-After ${limited.retryAfter}: one try comes back every 12 s`);
    t.like(JSON.parse(limited.body), { code: "resource_exhausted" });
    t.is((await getFrom("127.0.0.2", `Bearer ${API_KEY}`)).status, 200, "a valid client from another address is served");
    t.is((await getFrom("127.0.0.2", "Bearer wrong-key")).status, 401, "and another address has its own budget");

    const error = await t.throwsAsync(
      grpcCall(running.service.port, SubscriptionService, "ListEvents", ListEventsRequestSchema, ListEventsResponseSchema, {}, API_KEY),
    );
    t.is((error as { code?: number }).code, grpcStatus.RESOURCE_EXHAUSTED, "gRPC over HTTP/2 from the same address is limited too");
  },
);
