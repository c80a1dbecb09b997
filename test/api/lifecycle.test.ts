import test from "ava";
import { verifyBody } from "../../src/domain/signature.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { startSdkReceiver } from "../helpers/sdk-receiver.js";
import { rest, sharedService } from "../helpers/service.js";

const running = sharedService(test, { AUTO_DISABLE_AFTER: "off" });

const BASE = "/api/webhookSubscription";

async function publish(clientId: string, event: string, payload: Record<string, unknown>, idempotencyKey?: string) {
  return rest(
    running.baseUrl,
    "POST",
    "/api/internal/events/publish",
    { clientId, event, payload, ...(idempotencyKey ? { idempotencyKey } : {}) },
    adminAuth,
  );
}

test("internal APIs need the admin token; client keys are issued once and can be revoked", async (t) => {
  t.is((await rest(running.baseUrl, "POST", "/api/internal/clients", { name: "x" })).status, 401, "a client key is not an admin token");
  t.is((await rest(running.baseUrl, "POST", "/api/internal/clients", { name: "x" }, {})).status, 401);
  t.is((await rest(running.baseUrl, "POST", "/api/internal/clients", { name: "" }, adminAuth)).status, 400);
  const client = await createClient(running.baseUrl, "Acme");
  t.regex(client.key, /^whk_/);
  t.is((await rest(running.baseUrl, "GET", `${BASE}/events`, undefined, client.auth)).status, 200);

  const second = await rest(running.baseUrl, "POST", `/api/internal/clients/${client.id}/apiKeys`, {}, adminAuth);
  t.is(second.status, 200, second.text);
  const { id: keyId, key } = second.json.apiKey as { id: string; key: string };
  t.is((await rest(running.baseUrl, "GET", `${BASE}/events`, undefined, { authorization: `Bearer ${key}` })).status, 200);
  const revoked = await rest(running.baseUrl, "POST", `/api/internal/clients/${client.id}/apiKeys/${keyId}/revoke`, {}, adminAuth);
  t.is(revoked.status, 200, revoked.text);
  t.is((await rest(running.baseUrl, "GET", `${BASE}/events`, undefined, { authorization: `Bearer ${key}` })).status, 401);
  t.is((await rest(running.baseUrl, "GET", `${BASE}/events`, undefined, client.auth)).status, 200, "the other key still works");
  t.is((await rest(running.baseUrl, "POST", `/api/internal/clients/${client.id}/apiKeys/key_nope/revoke`, {}, adminAuth)).status, 404);
  const clients = await rest(running.baseUrl, "GET", "/api/internal/clients", undefined, adminAuth);
  t.true((clients.json.clients as Array<{ id: string }>).some((c) => c.id === client.id));
});

test("publishing fans out to the client's enabled subscriptions only, idempotently", async (t) => {
  const a = await createClient(running.baseUrl, "A");
  const b = await createClient(running.baseUrl, "B");
  const receiverA1 = await Receiver.start();
  const receiverA2 = await Receiver.start();
  const receiverB = await Receiver.start();
  t.teardown(() => Promise.all([receiverA1.close(), receiverA2.close(), receiverB.close()]));
  const subA1 = await rest(running.baseUrl, "POST", BASE, { event: "Payment.Succeeded", url: receiverA1.url }, a.auth);
  await rest(running.baseUrl, "POST", BASE, { event: "Payment.Succeeded", url: receiverA2.url }, a.auth);
  await rest(running.baseUrl, "POST", BASE, { event: "Payment.Failed", url: receiverA2.url }, a.auth);
  await rest(running.baseUrl, "POST", BASE, { event: "Payment.Succeeded", url: receiverB.url }, b.auth);

  const payload = { PaymentId: "pay_1", Amount: 10.5, Nested: { ok: true, list: [1, "two", null] } };
  const published = await publish(a.id, "Payment.Succeeded", payload, "order-1-paid");
  t.is(published.status, 200, published.text);
  const jobIds = published.json.jobIds as string[];
  t.is(jobIds.length, 2, "one job per matching enabled subscription of client A");
  t.false(published.json.duplicate as boolean);

  const [toA1] = await receiverA1.waitFor(1);
  await receiverA2.waitFor(1);
  const body = JSON.parse(toA1?.body ?? "{}");
  t.is(body.Event, "Payment.Succeeded");
  t.deepEqual({ ...body, Event: undefined, Timestamp: undefined }, { ...payload, Event: undefined, Timestamp: undefined });
  t.true(verifyBody(toA1?.body ?? "", toA1?.headers["x-signature"] as string, subA1.json.signatureKey as string));
  t.true(jobIds.includes(toA1?.headers["x-jobid"] as string));

  const again = await publish(a.id, "Payment.Succeeded", payload, "order-1-paid");
  t.deepEqual(again.json.jobIds, jobIds, "the same key returns the same job ids");
  t.true(again.json.duplicate as boolean);
  await new Promise((resolve) => setTimeout(resolve, 700));
  t.is(receiverA1.requests.length, 1, "and creates nothing new");
  t.is(receiverB.requests.length, 0, "client A's event never reaches client B");
});

test("published payloads are checked: base fields, schema, unknown event, unknown client", async (t) => {
  const a = await createClient(running.baseUrl, "Checker");
  const rejected = await publish(a.id, "Order.Created", { Event: "Sneaky.Override" });
  t.is(rejected.status, 400);
  t.regex(rejected.json.message as string, /may not set Event/);
  const invalid = await publish(a.id, "Order.Created", { OrderId: "o1", CustomerId: "c1", Currency: "euro", TotalAmount: -1 });
  t.is(invalid.status, 400);
  t.regex(invalid.json.message as string, /does not match the schema of Order\.Created.*Currency/);
  t.is((await publish(a.id, "No.Such", {})).status, 400);
  const unknown = await publish("cli_unknown", "Order.Cancelled", { OrderId: "o" });
  t.is(unknown.status, 404, "an unknown client is not found");
  t.regex(unknown.json.message as string, /client "cli_unknown" not found/);
  const nobody = await publish(a.id, "Order.Cancelled", { OrderId: "o" });
  t.is(nobody.status, 200, "a client without subscriptions gets no jobs");
  t.deepEqual(nobody.json.jobIds, []);
});

test("event types: register, update, list; the REST events list reflects them", async (t) => {
  const schema = { type: "object", required: ["TicketId"], properties: { TicketId: { type: "string" } } };
  const registered = await rest(
    running.baseUrl,
    "POST",
    "/api/internal/eventTypes",
    { name: "Ticket.Opened", description: "A ticket was opened.", samplePayload: { TicketId: "t-1" }, jsonSchema: schema },
    adminAuth,
  );
  t.is(registered.status, 200, registered.text);
  t.is((await rest(running.baseUrl, "POST", "/api/internal/eventTypes", { name: "Ticket.Opened" }, adminAuth)).status, 409);
  t.is((await rest(running.baseUrl, "POST", "/api/internal/eventTypes", { name: "bad name" }, adminAuth)).status, 400);
  const updated = await rest(running.baseUrl, "PATCH", "/api/internal/eventTypes/Ticket.Opened", { description: "Opened." }, adminAuth);
  t.is(updated.status, 200, updated.text);
  t.is(updated.json.description, "Opened.");
  t.deepEqual(updated.json.jsonSchema, schema, "unchanged fields stay");
  t.is((await rest(running.baseUrl, "PATCH", "/api/internal/eventTypes/Nope.Missing", { description: "x" }, adminAuth)).status, 404);

  const events = await rest(running.baseUrl, "GET", `${BASE}/events`);
  const listed = (events.json.events as Array<{ name: string; description: string }>).find((e) => e.name === "Ticket.Opened");
  t.is(listed?.description, "Opened.");
  const internal = await rest(running.baseUrl, "GET", "/api/internal/eventTypes", undefined, adminAuth);
  t.true((internal.json.eventTypes as Array<{ name: string }>).some((e) => e.name === "Ticket.Opened"));
});

test("subscriptions: list with pages, get, update, disable, delete; other clients see 404", async (t) => {
  const owner = await createClient(running.baseUrl, "Owner");
  const stranger = await createClient(running.baseUrl, "Stranger");
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const ids: string[] = [];
  for (const event of ["Order.Created", "Order.Shipped", "Order.Cancelled"]) {
    const created = await rest(running.baseUrl, "POST", BASE, { event, url: receiver.url }, owner.auth);
    ids.push(created.json.id as string);
  }
  const first = await rest(running.baseUrl, "GET", `${BASE}?pageSize=2`, undefined, owner.auth);
  t.is(first.status, 200, first.text);
  t.deepEqual(
    (first.json.subscriptions as Array<{ id: string }>).map((s) => s.id),
    ids.slice(0, 2),
  );
  t.truthy(first.json.nextPageToken);
  const second = await rest(running.baseUrl, "GET", `${BASE}?pageSize=2&pageToken=${first.json.nextPageToken}`, undefined, owner.auth);
  t.deepEqual(
    (second.json.subscriptions as Array<{ id: string }>).map((s) => s.id),
    ids.slice(2),
  );
  t.is(second.json.nextPageToken, "");
  t.is((await rest(running.baseUrl, "GET", `${BASE}?pageToken=garbage`, undefined, owner.auth)).status, 400);
  t.deepEqual((await rest(running.baseUrl, "GET", BASE, undefined, stranger.auth)).json.subscriptions, []);

  const id = ids[0] as string;
  t.is((await rest(running.baseUrl, "GET", `${BASE}/${id}`, undefined, owner.auth)).json.id, id);
  for (const attempt of [`${BASE}/${id}`, `${BASE}/sub_garbage`, `${BASE}/%00%27;drop`]) {
    const response = await rest(running.baseUrl, "GET", attempt, undefined, attempt.includes(id) ? stranger.auth : owner.auth);
    t.is(response.status, 404, `${attempt}: ${response.text}`);
  }
  t.is((await rest(running.baseUrl, "PATCH", `${BASE}/${id}`, { description: "hijack" }, stranger.auth)).status, 404);

  const moved = await rest(running.baseUrl, "PATCH", `${BASE}/${id}`, { url: `${receiver.url}?v=2`, description: "moved" }, owner.auth);
  t.is(moved.status, 200, moved.text);
  t.is(moved.json.url, `${receiver.url}?v=2`);
  t.is(moved.json.description, "moved");
  t.is((await rest(running.baseUrl, "PATCH", `${BASE}/${id}`, { url: "ftp://nope" }, owner.auth)).status, 400);

  const disabled = await rest(running.baseUrl, "PATCH", `${BASE}/${id}`, { enabled: false }, owner.auth);
  t.false(disabled.json.enabled as boolean);
  t.is(disabled.json.disabledReason, "disabled by its owner");
  const published = await publish(owner.id, "Order.Created", { OrderId: "o", CustomerId: "c", Currency: "EUR", TotalAmount: 1 });
  t.deepEqual(published.json.jobIds, [], "a disabled subscription receives nothing");
  const enabled = await rest(running.baseUrl, "PATCH", `${BASE}/${id}`, { enabled: true }, owner.auth);
  t.true(enabled.json.enabled as boolean);
  t.is(enabled.json.disabledReason, "");

  t.is((await rest(running.baseUrl, "DELETE", `${BASE}/${id}`, undefined, stranger.auth)).status, 404);
  t.is((await rest(running.baseUrl, "DELETE", `${BASE}/${id}`, undefined, owner.auth)).status, 200);
  t.is((await rest(running.baseUrl, "GET", `${BASE}/${id}`, undefined, owner.auth)).status, 404);
  t.is((await rest(running.baseUrl, "DELETE", `${BASE}/${id}`, undefined, owner.auth)).status, 404);
});

test("key rotation: the old key signs until confirmation, then the new one", async (t) => {
  const owner = await createClient(running.baseUrl, "Rotator");
  // The receiver SDK is the real receiver here: it verifies with every key it is given and says which one signed.
  let keys: string[] = [];
  const receiver = await startSdkReceiver("http", { keys: () => keys });
  t.teardown(() => receiver.close());
  const created = await rest(running.baseUrl, "POST", BASE, { event: "Customer.Created", url: receiver.url }, owner.auth);
  const id = created.json.id as string;
  const oldKey = created.json.signatureKey as string;
  t.is((await rest(running.baseUrl, "POST", `${BASE}/${id}/confirmSignatureKeyRotation`, {}, owner.auth)).status, 400);

  const rotating = await rest(running.baseUrl, "POST", `${BASE}/${id}/rotateSignatureKey`, {}, owner.auth);
  t.is(rotating.status, 200, rotating.text);
  const newKey = rotating.json.nextSignatureKey as string;
  t.regex(newKey, /BEGIN PUBLIC KEY/);
  t.not(newKey, oldKey);
  t.is(rotating.json.signatureKey, oldKey);
  t.true(Date.parse(rotating.json.rotationDeadline as string) > Date.now() + 3_600_000);
  keys = [oldKey, newKey];

  const sample = { event: "Customer.Created", url: receiver.url };
  await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, sample, owner.auth);
  await receiver.waitUntil(() => receiver.calls.length >= 1, "the delivery during the rotation");
  t.is(receiver.calls[0]?.keyIndex, 0, "old key still signs");

  const confirmed = await rest(running.baseUrl, "POST", `${BASE}/${id}/confirmSignatureKeyRotation`, {}, owner.auth);
  t.is(confirmed.json.signatureKey, newKey);
  t.is(confirmed.json.nextSignatureKey, "");
  await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, sample, owner.auth);
  await receiver.waitUntil(() => receiver.calls.length >= 2, "the delivery after confirmation");
  t.is(receiver.calls[1]?.keyIndex, 1, "new key signs after confirmation");
  t.deepEqual(receiver.errors, []);
});

test("a retry sends its first signature, and a signature by the new key once a rotation is confirmed", async (t) => {
  const owner = await createClient(running.baseUrl, "Retrier");
  let answered = 0;
  // 1st attempt: 500. 2nd: 503 with Retry-After, time to confirm the key rotation. 3rd: 200.
  const receiver = await Receiver.start(() => {
    answered++;
    if (answered === 1) return { status: 500, body: "not yet" };
    if (answered === 2) return { status: 503, headers: { "retry-after": "2" }, body: "later" };
    return { status: 200, body: "thanks" };
  });
  t.teardown(() => receiver.close());
  const created = await rest(running.baseUrl, "POST", BASE, { event: "Customer.Created", url: receiver.url }, owner.auth);
  const id = created.json.id as string;
  const oldKey = created.json.signatureKey as string;
  // Started before the job: generating the next key takes seconds on a loaded machine, longer than
  // the Retry-After window below; the confirmation inside that window is a quick update.
  const rotating = await rest(running.baseUrl, "POST", `${BASE}/${id}/rotateSignatureKey`, {}, owner.auth);
  t.is(rotating.json.signatureKey, oldKey, "the current key keeps signing until confirmed");
  await rest(
    running.baseUrl,
    "POST",
    `${BASE}/triggerSampleEventNotification`,
    { event: "Customer.Created", url: receiver.url },
    owner.auth,
  );
  const [first, second] = await receiver.waitFor(2);
  const signature = first?.headers["x-signature"] as string;
  t.true(verifyBody(first?.body ?? "", signature, oldKey));
  t.is(second?.headers["x-jobattempt"], "1");
  t.is(second?.headers["x-signature"], signature, "the retry sends the same signature");

  const confirmed = await rest(running.baseUrl, "POST", `${BASE}/${id}/confirmSignatureKeyRotation`, {}, owner.auth);
  const newKey = confirmed.json.signatureKey as string;
  t.not(newKey, oldKey);
  t.is(newKey, rotating.json.nextSignatureKey as string);
  const [, , third] = await receiver.waitFor(3);
  t.is(third?.headers["x-jobattempt"], "2");
  t.true(verifyBody(third?.body ?? "", third?.headers["x-signature"] as string, newKey), "signed anew with the confirmed key");
  t.false(verifyBody(third?.body ?? "", third?.headers["x-signature"] as string, oldKey));
});

test("delivery log, redelivery and recovery", async (t) => {
  const owner = await createClient(running.baseUrl, "Logger");
  const receiver = await Receiver.start(() => ({ status: 500, body: `${"overloaded ".repeat(1000)}` }));
  t.teardown(() => receiver.close());
  const created = await rest(running.baseUrl, "POST", BASE, { event: "Invoice.Issued", url: receiver.url }, owner.auth);
  const id = created.json.id as string;
  const payload = { InvoiceId: "inv-1", OrderId: "o-1", DueDate: "2026-12-01", Amount: 1 };
  const failing = await publish(owner.id, "Invoice.Issued", payload);
  const failedJob = (failing.json.jobIds as string[])[0] as string;
  await receiver.waitFor(6);
  await new Promise((resolve) => setTimeout(resolve, 500));

  receiver.respond = () => ({ status: 200, body: "thanks" });
  const ok = await publish(owner.id, "Invoice.Issued", { ...payload, InvoiceId: "inv-2" });
  const okJob = (ok.json.jobIds as string[])[0] as string;
  await receiver.waitFor(7);
  await new Promise((resolve) => setTimeout(resolve, 300));

  const log = await rest(running.baseUrl, "GET", `${BASE}/${id}/notifications`, undefined, owner.auth);
  t.is(log.status, 200, log.text);
  const listed = log.json.notifications as Array<{ id: string; status: string; attemptCount: number }>;
  t.deepEqual(
    listed.map((n) => n.id),
    [okJob, failedJob],
    "newest first",
  );
  t.deepEqual(
    listed.map((n) => n.status),
    ["NOTIFICATION_STATUS_DELIVERED", "NOTIFICATION_STATUS_FAILED"],
  );
  const onlyFailed = await rest(
    running.baseUrl,
    "GET",
    `${BASE}/${id}/notifications?status=NOTIFICATION_STATUS_FAILED`,
    undefined,
    owner.auth,
  );
  t.deepEqual(
    (onlyFailed.json.notifications as Array<{ id: string }>).map((n) => n.id),
    [failedJob],
  );

  const detail = await rest(running.baseUrl, "GET", `${BASE}/${id}/notifications/${failedJob}`, undefined, owner.auth);
  t.is(detail.status, 200, detail.text);
  const attempts = detail.json.attempts as Array<{
    attempt: number;
    statusCode: number;
    responseBody: string;
    durationMs: number;
    startedAt: string;
  }>;
  t.deepEqual(
    attempts.map((a) => a.attempt),
    [0, 1, 2, 3, 4, 5],
  );
  t.true(attempts.every((a) => a.statusCode === 500 && a.responseBody.startsWith("overloaded") && a.responseBody.length <= 4096));
  t.true(attempts.every((a) => a.durationMs >= 0 && !Number.isNaN(Date.parse(a.startedAt))));
  const stranger = await createClient(running.baseUrl, "Peeker");
  t.is((await rest(running.baseUrl, "GET", `${BASE}/${id}/notifications/${failedJob}`, undefined, stranger.auth)).status, 404);
  t.is((await rest(running.baseUrl, "GET", `${BASE}/${id}/notifications/ntf_nope`, undefined, owner.auth)).status, 404);

  const redelivered = await rest(running.baseUrl, "POST", `${BASE}/${id}/notifications/${failedJob}/redeliver`, {}, owner.auth);
  t.is(redelivered.status, 200, redelivered.text);
  const newJob = redelivered.json.jobId as string;
  t.not(newJob, failedJob);
  const [, , , , , , , redelivery] = await receiver.waitFor(8);
  t.is(redelivery?.headers["x-jobid"], newJob);
  t.is(redelivery?.headers["x-jobattempt"], "0");
  t.is(redelivery?.body, receiver.requests[0]?.body, "the identical body, Timestamp included");

  const recovered = await rest(
    running.baseUrl,
    "POST",
    `${BASE}/${id}/recover`,
    { since: new Date(Date.now() - 60_000).toISOString() },
    owner.auth,
  );
  t.is(recovered.status, 200, recovered.text);
  t.is((recovered.json.jobIds as string[]).length, 1, "the one failed notification");
  await receiver.waitFor(9);
  t.is((await rest(running.baseUrl, "POST", `${BASE}/${id}/recover`, {}, owner.auth)).status, 400, "since is required");
});
