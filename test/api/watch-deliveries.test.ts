import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import test from "ava";
import { DeliveryActivityKind, DeliveryOutcome } from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, API_KEY, rest, sharedService } from "../helpers/service.js";
import { describe, ofJob, watchAllOver, watchOver } from "../helpers/watch.js";

const running = sharedService(test);
/** Answers by request path; tests run side by side, each on paths of its own. Anything else gets 200. */
const answers = new Map<string, () => { status: number; body?: string }>();
const receiver = Receiver.shared(test, (request) => answers.get(request.path)?.() ?? { status: 200, body: "ok" });

const base = () => `http://127.0.0.1:${running.service.port}`;
const transports = {
  "Connect over HTTP/1.1": () => createConnectTransport({ baseUrl: base(), httpVersion: "1.1" }),
  "Connect over HTTP/2": () => createConnectTransport({ baseUrl: base(), httpVersion: "2" }),
  gRPC: () => createGrpcTransport({ baseUrl: base() }),
  "gRPC-Web": () => createGrpcWebTransport({ baseUrl: base(), httpVersion: "1.1" }),
};

/** A subscription of the client holding `auth` to `event` at a receiver path of its own. */
async function subscribe(
  event: string,
  path: string,
  auth: Record<string, string> = { authorization: `Bearer ${API_KEY}` },
): Promise<{ id: string; url: string }> {
  const url = receiver.url.replace("/baseWebhookNotification", path);
  const created = await rest(base(), "POST", "/api/webhookSubscription", { event, url }, auth);
  if (created.status !== 200) throw new Error(`subscribe: ${created.status} ${created.text}`);
  return { id: String(created.json.id), url };
}

async function triggerSample(
  event: string,
  url: string,
  auth: Record<string, string> = { authorization: `Bearer ${API_KEY}` },
): Promise<string> {
  const answer = await rest(base(), "POST", "/api/webhookSubscription/triggerSampleEventNotification", { event, url }, auth);
  if (answer.status !== 200) throw new Error(`trigger: ${answer.status} ${answer.text}`);
  return String(answer.json.jobId);
}

const delivered = (jobId: string) => (activities: Parameters<typeof ofJob>[0]) =>
  ofJob(activities, jobId).some((activity) => activity.kind === DeliveryActivityKind.DELIVERED);

for (const [name, transport] of Object.entries(transports)) {
  test(`${name}: a watcher receives a flow's activities in order, a failed attempt and its retry included`, async (t) => {
    const path = `/flow-${name.replace(/\W+/g, "-")}`;
    const { url } = await subscribe("Order.Created", path);
    let calls = 0;
    answers.set(path, () => (calls++ === 0 ? { status: 503, body: "busy" } : { status: 200 }));
    const watching = await watchOver(transport(), API_KEY);
    try {
      const jobId = await triggerSample("Order.Created", url);
      const activities = ofJob(await watching.until(delivered(jobId)), jobId);
      t.deepEqual(describe(activities), [
        "ACCEPTED",
        "ATTEMPT_STARTED 0",
        "ATTEMPT_FINISHED 0 503",
        "ATTEMPT_STARTED 1",
        "ATTEMPT_FINISHED 1 200",
        "DELIVERED",
      ]);
      t.true(activities.every((activity) => activity.event === "Order.Created" && !activity.replayed));
      t.true((activities[2]?.durationMs ?? -1) >= 0);
    } finally {
      watching.close();
    }
  });
}

test("a client's watcher never sees another client's activity; the admin sees both, or one client's", async (t) => {
  const other = await createClient(base(), "Other tenant");
  const mine = await subscribe("Order.Shipped", "/isolation-mine");
  const theirs = await subscribe("Order.Shipped", "/isolation-theirs", other.auth);
  const transport = createConnectTransport({ baseUrl: base(), httpVersion: "1.1" });
  const myWatch = await watchOver(transport, API_KEY);
  const theirWatch = await watchOver(transport, other.key);
  const adminWatch = await watchAllOver(transport, ADMIN_TOKEN);
  const adminTheirs = await watchAllOver(transport, ADMIN_TOKEN, { clientId: other.id });
  try {
    const theirJob = await triggerSample("Order.Shipped", theirs.url, other.auth);
    const myJob = await triggerSample("Order.Shipped", mine.url);
    await myWatch.until(delivered(myJob));
    await theirWatch.until(delivered(theirJob));
    await adminWatch.until((all) => delivered(myJob)(all) && delivered(theirJob)(all));
    await adminTheirs.until(delivered(theirJob));
    t.deepEqual(ofJob(myWatch.activities, theirJob), []);
    t.deepEqual(ofJob(theirWatch.activities, myJob), []);
    t.true(theirWatch.activities.every((activity) => activity.clientId === other.id));
    t.deepEqual(ofJob(adminTheirs.activities, myJob), []);
  } finally {
    for (const watching of [myWatch, theirWatch, adminWatch, adminTheirs]) watching.close();
  }

  // Another client's subscription is not_found, as everywhere.
  const refused = await t.throwsAsync(watchOver(transport, API_KEY, { subscriptionId: theirs.id }));
  t.is(ConnectError.from(refused).code, Code.NotFound);
});

test("filters: by subscription, by event, and failures only", async (t) => {
  const ok = await subscribe("Order.Cancelled", "/filter-ok");
  const failing = await subscribe("Order.Cancelled", "/filter-failing");
  answers.set("/filter-failing", () => ({ status: 500 }));
  const transport = createGrpcTransport({ baseUrl: base() });
  const bySubscription = await watchOver(transport, API_KEY, { subscriptionId: ok.id });
  const failures = await watchOver(transport, API_KEY, { event: "Order.Cancelled", outcome: DeliveryOutcome.FAILED });
  const otherEvent = await watchOver(transport, API_KEY, { event: "Payment.Failed" });
  try {
    const failingJob = await triggerSample("Order.Cancelled", failing.url);
    const okJob = await triggerSample("Order.Cancelled", ok.url);
    await bySubscription.until(delivered(okJob));
    await failures.until((all) => ofJob(all, failingJob).some((activity) => activity.kind === DeliveryActivityKind.FAILED));
    t.true(bySubscription.activities.every((activity) => activity.subscriptionId === ok.id));
    t.deepEqual(ofJob(failures.activities, okJob), []);
    t.deepEqual(describe(ofJob(failures.activities, failingJob)), [
      ...[0, 1, 2, 3, 4, 5].map((attempt) => `ATTEMPT_FINISHED ${attempt} 500`),
      "FAILED",
    ]);
    t.deepEqual(otherEvent.activities, []);
  } finally {
    for (const watching of [bySubscription, failures, otherEvent]) watching.close();
  }
});

test("since replays the delivery log before going live, without repeating it", async (t) => {
  const { id, url } = await subscribe("Order.Created", "/replay");
  const before = new Date(Date.now() - 1000);
  const transport = createConnectTransport({ baseUrl: base(), httpVersion: "2" });
  const first = await watchOver(transport, API_KEY, { subscriptionId: id });
  const jobId = await triggerSample("Order.Created", url);
  await first.until(delivered(jobId));
  first.close();

  const later = await watchOver(transport, API_KEY, { subscriptionId: id, since: timestampFromDate(before) });
  try {
    t.deepEqual(describe(ofJob(later.activities, jobId)), ["ACCEPTED", "ATTEMPT_FINISHED 0 200", "DELIVERED"]);
    t.true(later.activities.every((activity) => activity.replayed));
    const next = await triggerSample("Order.Created", url);
    await later.until(delivered(next));
    t.deepEqual(describe(ofJob(later.activities, next)), ["ACCEPTED", "ATTEMPT_STARTED 0", "ATTEMPT_FINISHED 0 200", "DELIVERED"]);
    t.is(ofJob(later.activities, jobId).length, 3, "the replayed job is not repeated");
  } finally {
    later.close();
  }
});

test("without a valid credential the stream is refused; the admin stream takes the admin token only", async (t) => {
  const transport = createConnectTransport({ baseUrl: base(), httpVersion: "1.1" });
  const noKey = await t.throwsAsync(watchOver(transport, "not-a-key"));
  t.is(ConnectError.from(noKey).code, Code.Unauthenticated);
  const keyForAdmin = await t.throwsAsync(watchAllOver(transport, API_KEY));
  t.is(ConnectError.from(keyForAdmin).code, Code.Unauthenticated);
  t.is((await rest(base(), "GET", "/api/internal/clients", undefined, adminAuth)).status, 200);
});
