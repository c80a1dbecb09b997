import test, { type ExecutionContext } from "ava";
import generated from "../../src/gen/openapi.json" with { type: "json" };
import { adminAuth, createClient } from "../helpers/admin.js";
import { eventually } from "../helpers/eventually.js";
import { OpenApiChecker } from "../helpers/openapi.js";
import { Receiver } from "../helpers/receiver.js";
import { sharedService } from "../helpers/service.js";

// A small body limit and rate limit, so that 413 and 429 are cheap to provoke.
const RATE_LIMIT = { RATE_LIMIT_PER_SECOND: "20", RATE_LIMIT_BURST: "40" };
const running = sharedService(test, { MAX_BODY_BYTES: "65536", ...RATE_LIMIT });
const checker = new OpenApiChecker(generated);
// Every delivery fails, so there are failed notifications to list and recover.
const receiver = Receiver.shared(test, () => ({ status: 500 }));

interface Answer {
  status: number;
  json: Record<string, unknown>;
  headers: Headers;
  operationId: string;
}

/**
 * One real call, checked against the document: the operation must exist,
 * the status must be listed for it (or fall under `default` when
 * `allowDefault`), and the body must match the listed schema.
 */
async function call(
  t: ExecutionContext,
  method: string,
  path: string,
  options: { body?: string | object; headers?: Record<string, string>; expect?: number; allowDefault?: boolean } = {},
): Promise<Answer> {
  const found = checker.find(method, path);
  if (!found) throw new Error(`${method} ${path} matches no operation of the document`);
  const body = options.body === undefined ? undefined : typeof options.body === "string" ? options.body : JSON.stringify(options.body);
  const response = await fetch(`${running.baseUrl}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  t.is(response.status, options.expect ?? 200, `${method} ${path}: ${text}`);
  t.is(response.headers.get("content-type"), "application/json", `${method} ${path}`);
  const json = JSON.parse(text) as Record<string, unknown>;
  t.deepEqual(checker.check(found, response.status, json, options.allowDefault), [], `${method} ${path}: ${text}`);
  return { status: response.status, json, headers: response.headers, operationId: String(found.operation.operationId) };
}

test("every operation answers as the document says: a walk through the whole REST API", async (t) => {
  const answered = new Set<string>();
  const walk = async (method: string, path: string, options: Parameters<typeof call>[3] = {}) => {
    const answer = await call(t, method, path, options);
    answered.add(answer.operationId);
    return answer.json;
  };
  const admin = { headers: adminAuth };

  const created = await walk("POST", "/api/internal/clients", { ...admin, body: { name: "OpenAPI walk" } });
  const clientId = (created.client as { id: string }).id;
  const auth = { authorization: `Bearer ${(created.apiKey as { key: string }).key}` };
  await walk("GET", "/api/internal/clients", admin);
  await walk("PATCH", `/api/internal/clients/${clientId}`, { ...admin, body: { retention: "604800s", maxSubscriptions: 10 } });
  const second = await walk("POST", `/api/internal/clients/${clientId}/apiKeys`, { ...admin, body: {} });
  await walk("POST", `/api/internal/clients/${clientId}/apiKeys/${(second.apiKey as { id: string }).id}/revoke`, admin);
  await walk("GET", `/api/internal/clients/${clientId}/apiKeys`, admin);
  await walk("POST", `/api/internal/clients/${clientId}/disable`, { ...admin, body: { reason: "walked out" } });
  await walk("POST", `/api/internal/clients/${clientId}/enable`, admin);

  const event = "Walk.Happened";
  await walk("POST", "/api/internal/eventTypes", {
    ...admin,
    body: {
      name: event,
      description: "A walk happened.",
      samplePayload: { WalkId: "w-0" },
      jsonSchema: { type: "object", required: ["WalkId"], properties: { WalkId: { type: "string" } } },
    },
  });
  await walk("PATCH", `/api/internal/eventTypes/${event}`, { ...admin, body: { description: "A walk happened, really." } });
  await walk("GET", "/api/internal/eventTypes", admin);

  await walk("GET", "/api/webhookSubscription/events", { headers: auth });
  const subscription = await walk("POST", "/api/webhookSubscription", { headers: auth, body: { event, url: receiver.url } });
  const base = `/api/webhookSubscription/${subscription.id}`;
  await walk("GET", "/api/webhookSubscription?pageSize=10", { headers: auth });
  await walk("GET", base, { headers: auth });
  await walk("PATCH", base, { headers: auth, body: { description: "walked" } });
  await walk("POST", "/api/webhookSubscription/triggerSampleEventNotification", { headers: auth, body: { event, url: receiver.url } });
  await walk("POST", "/api/internal/events/publish", { ...admin, body: { clientId, event, payload: { WalkId: "w-1" } } });
  // An event the client does not subscribe to: no third notification.
  const unsubscribed = {
    clientId,
    event: "Order.Created",
    payload: { OrderId: "o-1", CustomerId: "c-1", TotalAmount: 1, Currency: "EUR" },
  };
  await walk("POST", "/api/internal/events/publishBatch", { ...admin, body: { events: [unsubscribed] } });

  // Both notifications fail (the receiver answers 500), through every retry.
  const failedList = `${base}/notifications?status=NOTIFICATION_STATUS_FAILED&pageSize=10`;
  const failed = await eventually(
    "two failed notifications",
    async () => {
      const { json } = await call(t, "GET", failedList, { headers: auth });
      const notifications = json.notifications as Array<{ id: string }>;
      return notifications.length === 2 ? notifications : undefined;
    },
    { timeoutMs: 20_000 },
  );
  await walk("GET", failedList, { headers: auth });
  const jobId = failed[0]?.id;
  const notification = await walk("GET", `${base}/notifications/${jobId}`, { headers: auth });
  t.is((notification.attempts as unknown[]).length, 6, "the first attempt and five retries");
  await walk("POST", `${base}/notifications/${jobId}/redeliver`, { headers: auth });
  const recovered = await walk("POST", `${base}/recover`, { headers: auth, body: { since: subscription.createdAt } });
  t.is((recovered.jobIds as string[]).length, 2);

  await walk("POST", `${base}/rotateSignatureKey`, { headers: auth });
  await walk("POST", `${base}/confirmSignatureKeyRotation`, { headers: auth });
  await walk("DELETE", base, { headers: auth });
  // A job stays answerable after its subscription is deleted.
  const job = await walk("GET", `/api/internal/jobs/${jobId}`, admin);
  t.is((job.notification as { id: string }).id, String(jobId));
  t.is(job.clientId, clientId);
  t.true(job.subscriptionDeleted);
  const dashboard = await walk("GET", "/api/internal/dashboard", admin);
  t.true((dashboard.failed as number) >= 2, "the two notifications that failed for good");
  const stats = (await walk("GET", "/api/internal/stats?range=24h", admin)).stats as { totals: { failed?: string } };
  t.true(Number(stats.totals.failed ?? 0) >= 2, "the delivery figures count them too");
  await walk("GET", "/api/webhookSubscription/stats?range=1h", { headers: auth });
  await walk("DELETE", `/api/internal/clients/${clientId}`, admin);

  const operationIds = checker.operations.map(({ operation }) => String(operation.operationId));
  t.deepEqual(
    operationIds.filter((id) => !answered.has(id)),
    [],
    "every documented operation was called",
  );
});

test("refusals are Connect errors under the status the document lists for the operation", async (t) => {
  const auth = (await createClient(running.baseUrl, "OpenAPI refusals")).auth;
  await call(t, "POST", "/api/webhookSubscription", { headers: auth, body: '{"event":', expect: 400 });
  await call(t, "POST", "/api/webhookSubscription", { headers: auth, body: { event: "No.Such", url: receiver.url }, expect: 400 });
  await call(t, "GET", "/api/webhookSubscription/events", { expect: 401 });
  await call(t, "GET", "/api/webhookSubscription/sub_does_not_exist", { headers: auth, expect: 404 });
  await call(t, "PATCH", "/api/webhookSubscription/sub_does_not_exist", {
    headers: auth,
    body: { description: "x".repeat(70_000) },
    expect: 413,
  });
  await call(t, "POST", "/api/webhookSubscription", {
    headers: { ...auth, "content-type": "text/plain" },
    body: "event=Order.Created",
    expect: 415,
  });
  // An already registered event type: 409, which the document leaves to `default`.
  const conflict = await call(t, "POST", "/api/internal/eventTypes", {
    headers: adminAuth,
    body: { name: "Order.Created", description: "again" },
    expect: 409,
    allowDefault: true,
  });
  t.is(conflict.json.code, "already_exists");
});

test("over the rate limit: 429 with Retry-After, as documented", async (t) => {
  const auth = (await createClient(running.baseUrl, "OpenAPI rate limit")).auth;
  const path = "/api/webhookSubscription/events";
  // Bursts of calls until one is refused: the bucket refills while we look.
  const refused = await eventually(
    "a 429",
    async () => {
      const responses = await Promise.all(Array.from({ length: 20 }, () => fetch(`${running.baseUrl}${path}`, { headers: auth })));
      const bodies = await Promise.all(responses.map((response) => response.text()));
      const index = responses.findIndex((response) => response.status === 429);
      return index < 0 ? undefined : { response: responses[index] as Response, body: bodies[index] as string };
    },
    { timeoutMs: 20_000 },
  );
  const found = checker.find("GET", path);
  if (!found) throw new Error(`GET ${path} matches no operation of the document`);
  t.deepEqual(checker.check(found, 429, JSON.parse(refused.body)), [], refused.body);
  t.regex(refused.response.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
  const documented = (generated.components.responses.TooManyRequests as { headers?: Record<string, unknown> }).headers;
  t.truthy(documented?.["Retry-After"], "the document lists the header");
});
