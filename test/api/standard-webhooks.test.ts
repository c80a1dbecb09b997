import type { IncomingHttpHeaders } from "node:http";
import type * as grpc from "@grpc/grpc-js";
import test from "ava";
import { Webhook } from "standardwebhooks";
import { SignatureScheme } from "../../src/gen/webhooks/v1/subscription_pb.js";
import {
  CreateSubscriptionRequestSchema,
  CreateSubscriptionResponseSchema,
  SubscriptionService,
} from "../../src/gen/webhooks/v1/subscription_service_pb.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { grpcCall } from "../helpers/grpc.js";
import { type ReceivedRequest, Receiver } from "../helpers/receiver.js";
import { startSdkReceiver } from "../helpers/sdk-receiver.js";
import { rest, sharedService } from "../helpers/service.js";

// Subscriptions that sign as Standard Webhooks, checked by the `standardwebhooks` library, a verifier we did not write.

const running = sharedService(test, { AUTO_DISABLE_AFTER: "off" });
const BASE = "/api/webhookSubscription";
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

/** A delivery as the library sees it: the raw body and the headers as sent. */
const verifies = (secret: string, request: ReceivedRequest | undefined): boolean => {
  try {
    new Webhook(secret).verify(request?.body ?? "", (request?.headers ?? {}) as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};

/** A receiver that answers as a Standard Webhooks receiver would: 200 if any of `secrets()` verifies, else 401. */
async function verifyingReceiver(secrets: () => string[]): Promise<Receiver> {
  return Receiver.start((request) => ({ status: secrets().some((secret) => verifies(secret, request)) ? 200 : 401 }));
}

const jobOf = (headers: IncomingHttpHeaders) => headers["webhook-id"] as string;

type Owner = { auth: Record<string, string> };

/** Creates a subscription of `owner`'s to `event` at `url`, signed with `signatureScheme`. */
const subscribe = (owner: Owner, event: string, url: string, signatureScheme: unknown) =>
  rest(running.baseUrl, "POST", BASE, { event, url, signatureScheme }, owner.auth);

/** Asks for a sample of `event` sent to `url`, as `owner`. */
const sampleOf = (owner: Owner, event: string, url: string) =>
  rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, { event, url }, owner.auth);

test("REST: a Standard Webhooks subscription answers its whsec_ secret, and the library verifies its deliveries", async (t) => {
  const owner = await createClient(running.baseUrl, "Standard receiver");
  let secret = "";
  const receiver = await verifyingReceiver(() => [secret]);
  t.teardown(() => receiver.close());
  const created = await subscribe(owner, "Order.Created", receiver.url, "STANDARD_WEBHOOKS");
  t.is(created.status, 200, created.text);
  t.is(created.json.signatureScheme, "SIGNATURE_SCHEME_STANDARD_WEBHOOKS");
  secret = created.json.signatureKey as string;
  t.regex(secret, SECRET);
  const id = created.json.id as string;
  t.like((await rest(running.baseUrl, "GET", `${BASE}/${id}`, undefined, owner.auth)).json, { signatureKey: secret });
  const listed = await rest(running.baseUrl, "GET", BASE, undefined, owner.auth);
  t.like(
    (listed.json.subscriptions as Array<{ id: string }>).find((s) => s.id === id),
    { signatureKey: secret },
  );

  const sample = await sampleOf(owner, "Order.Created", receiver.url);
  const published = await rest(
    running.baseUrl,
    "POST",
    "/api/internal/events/publish",
    { clientId: owner.id, event: "Order.Created", payload: { OrderId: "ord_1", CustomerId: "cus_1", TotalAmount: 1.5, Currency: "EUR" } },
    adminAuth,
  );
  t.is(published.status, 200, published.text);
  const deliveries = await receiver.waitFor(2);
  t.deepEqual(deliveries.map((d) => jobOf(d.headers)).sort(), [sample.json.jobId as string, ...(published.json.jobIds as string[])].sort());
  for (const delivery of deliveries) {
    t.is(delivery.status, 200, "the library verified it");
    t.like(JSON.parse(delivery.body), { Event: "Order.Created" });
    t.is(delivery.headers["x-jobattempt"], "0");
    t.is(delivery.headers["x-signature"], undefined, "no RSA signature");
    t.regex(delivery.headers["webhook-signature"] as string, /^v1,[A-Za-z0-9+/]{43}=$/);
    const sentAt = Number(delivery.headers["webhook-timestamp"]);
    t.true(Math.abs(sentAt - delivery.at / 1000) < 5, "webhook-timestamp is the attempt's time, in seconds");
  }
});

test("a retry keeps webhook-id, raises X-JobAttempt and signs its own timestamp", async (t) => {
  const owner = await createClient(running.baseUrl, "Standard retrier");
  let secret = "";
  let answered = 0;
  const receiver = await Receiver.start((request) => {
    answered++;
    return { status: answered === 1 ? 500 : verifies(secret, request) ? 200 : 401 };
  });
  t.teardown(() => receiver.close());
  const created = await subscribe(owner, "Customer.Created", receiver.url, "standard_webhooks");
  t.is(created.status, 200, created.text);
  secret = created.json.signatureKey as string;
  await sampleOf(owner, "Customer.Created", receiver.url);
  const [first, second] = await receiver.waitFor(2);
  t.true(verifies(secret, first));
  t.is(second?.status, 200);
  t.is(jobOf(second?.headers ?? {}), jobOf(first?.headers ?? {}));
  t.deepEqual([first?.headers["x-jobattempt"], second?.headers["x-jobattempt"]], ["0", "1"]);
  t.true(Number(second?.headers["webhook-timestamp"]) >= Number(first?.headers["webhook-timestamp"]));
});

test("across a key rotation: both secrets sign until it is confirmed, then only the new one", async (t) => {
  const owner = await createClient(running.baseUrl, "Standard rotation");
  const receiver = await Receiver.start(() => ({ status: 200 }));
  t.teardown(() => receiver.close());
  const created = await subscribe(owner, "Payment.Succeeded", receiver.url, "SIGNATURE_SCHEME_STANDARD_WEBHOOKS");
  const id = created.json.id as string;
  const oldSecret = created.json.signatureKey as string;
  const deliver = async () => {
    const answer = await sampleOf(owner, "Payment.Succeeded", receiver.url);
    t.is(answer.status, 200, answer.text);
    return receiver.waitForRequest((request) => jobOf(request.headers) === answer.json.jobId, `job ${answer.json.jobId}`);
  };

  const before = await deliver();
  t.true(verifies(oldSecret, before));

  const rotating = await rest(running.baseUrl, "POST", `${BASE}/${id}/rotateSignatureKey`, {}, owner.auth);
  t.is(rotating.status, 200, rotating.text);
  t.is(rotating.json.signatureKey, oldSecret);
  const newSecret = rotating.json.nextSignatureKey as string;
  t.regex(newSecret, SECRET);
  t.not(newSecret, oldSecret);
  const during = await deliver();
  t.is(String(during.headers["webhook-signature"]).split(" ").length, 2, "two signatures, space-separated");
  t.true(verifies(oldSecret, during), "a receiver still on the old secret verifies");
  t.true(verifies(newSecret, during), "a receiver already on the new secret verifies");

  const confirmed = await rest(running.baseUrl, "POST", `${BASE}/${id}/confirmSignatureKeyRotation`, {}, owner.auth);
  t.like(confirmed.json, { signatureKey: newSecret, nextSignatureKey: "" });
  const after = await deliver();
  t.true(verifies(newSecret, after));
  t.false(verifies(oldSecret, after), "the old secret is retired");
  t.like((await rest(running.baseUrl, "GET", `${BASE}/${id}`, undefined, owner.auth)).json, { signatureKey: newSecret });
});

test("Ed25519: the receiver SDK verifies v1a deliveries with the whpk_ keys, before, during and after a rotation", async (t) => {
  const owner = await createClient(running.baseUrl, "Ed25519 receiver");
  let keys: string[] = [];
  const receiver = await startSdkReceiver("http", { scheme: "STANDARD_WEBHOOKS", keys: () => keys });
  t.teardown(() => receiver.close());
  const created = await subscribe(owner, "Payment.Succeeded", receiver.url, "STANDARD_WEBHOOKS_ED25519");
  t.is(created.status, 200, created.text);
  t.is(created.json.signatureScheme, "SIGNATURE_SCHEME_STANDARD_WEBHOOKS_ED25519");
  const id = created.json.id as string;
  const oldKey = created.json.signatureKey as string;
  t.regex(oldKey, /^whpk_[A-Za-z0-9+/]{43}=$/);
  const deliver = async (phase: string) => {
    const answer = await sampleOf(owner, "Payment.Succeeded", receiver.url);
    t.is(answer.status, 200, answer.text);
    await receiver.waitUntil(() => receiver.calls.some((call) => call.jobId === answer.json.jobId), `the ${phase} delivery`);
    return receiver.calls.find((call) => call.jobId === answer.json.jobId);
  };

  keys = [oldKey];
  t.like(await deliver("first"), { keyIndex: 0, attempt: 0, event: "Payment.Succeeded" });
  const rotating = await rest(running.baseUrl, "POST", `${BASE}/${id}/rotateSignatureKey`, {}, owner.auth);
  const newKey = rotating.json.nextSignatureKey as string;
  t.regex(newKey, /^whpk_/);
  keys = [newKey];
  t.like(await deliver("rotating"), { keyIndex: 0 }, "the new key alone verifies while both sign");
  await rest(running.baseUrl, "POST", `${BASE}/${id}/confirmSignatureKeyRotation`, {}, owner.auth);
  keys = [oldKey, newKey];
  t.like(await deliver("confirmed"), { keyIndex: 1 }, "only the new key signs once confirmed");
  t.deepEqual(receiver.errors, [], "no delivery was refused");
  t.true(receiver.requests.every((request) => /^v1a,/.test(String(request.headers["webhook-signature"]))));
});

test("REST: the scheme defaults to RSA_SHA256; a bad one is a 400 naming the choices; it cannot change later", async (t) => {
  const owner = await createClient(running.baseUrl, "Scheme chooser");
  const url = "http://127.0.0.1:9/baseWebhookNotification";
  const plain = await rest(running.baseUrl, "POST", BASE, { event: "Order.Created", url }, owner.auth);
  t.is(plain.json.signatureScheme, "SIGNATURE_SCHEME_RSA_SHA256");
  t.regex(plain.json.signatureKey as string, /^-----BEGIN PUBLIC KEY-----/);
  const unspecified = await subscribe(owner, "Order.Created", `${url}?again`, "UNSPECIFIED");
  t.is(unspecified.json.signatureScheme, "SIGNATURE_SCHEME_RSA_SHA256");

  const bogus = await subscribe(owner, "Order.Created", url, "ED25519");
  t.is(bogus.status, 400, bogus.text);
  t.like(bogus.json, {
    code: "invalid_argument",
    message:
      "signatureScheme must be one of UNSPECIFIED, RSA_SHA256, STANDARD_WEBHOOKS, STANDARD_WEBHOOKS_ED25519 (or their full names, e.g. SIGNATURE_SCHEME_STANDARD_WEBHOOKS_ED25519)",
  });
  const number = await subscribe(owner, "Order.Created", url, 7);
  t.is(number.status, 400, number.text);
  t.like(number.json, {
    code: "invalid_argument",
    message: "signatureScheme 7 is not a signature scheme; use one of RSA_SHA256, STANDARD_WEBHOOKS, STANDARD_WEBHOOKS_ED25519",
  });

  const change = await rest(running.baseUrl, "PATCH", `${BASE}/${plain.json.id}`, { signatureScheme: "STANDARD_WEBHOOKS" }, owner.auth);
  t.is(change.status, 400, change.text);
  t.is(change.json.code, "invalid_argument");
  const listed = await rest(running.baseUrl, "GET", BASE, undefined, owner.auth);
  t.is((listed.json.subscriptions as unknown[]).length, 2, "nothing was created by the refused requests");
});

test("gRPC: the scheme is chosen by its enum; a number no scheme has is INVALID_ARGUMENT", async (t) => {
  const owner = await createClient(running.baseUrl, "gRPC scheme chooser");
  const call = (signatureScheme: SignatureScheme) =>
    grpcCall(
      running.service.port,
      SubscriptionService,
      "CreateSubscription",
      CreateSubscriptionRequestSchema,
      CreateSubscriptionResponseSchema,
      { event: "Order.Created", url: "http://127.0.0.1:9/baseWebhookNotification", signatureScheme },
      owner.key,
    );
  const created = await call(SignatureScheme.STANDARD_WEBHOOKS);
  t.is(created.subscription?.signatureScheme, SignatureScheme.STANDARD_WEBHOOKS);
  t.regex(created.subscription?.signatureKey ?? "", SECRET);
  t.is((await call(SignatureScheme.UNSPECIFIED)).subscription?.signatureScheme, SignatureScheme.RSA_SHA256);
  const refused = await t.throwsAsync<grpc.ServiceError>(call(7 as SignatureScheme));
  t.is(refused?.code, 3, "INVALID_ARGUMENT");
  t.regex(refused?.details ?? "", /signatureScheme 7 is not a signature scheme/);
});
