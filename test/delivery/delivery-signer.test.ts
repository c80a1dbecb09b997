import { createPublicKey, randomBytes, verify } from "node:crypto";
import test from "ava";
import { Webhook } from "standardwebhooks";
import { DeliverySigner } from "../../src/delivery/delivery-signer.js";
import { KeySealer } from "../../src/domain/key-sealing.js";
import type { Notification, SignatureScheme, Subscription } from "../../src/domain/model.js";
import { verifyBody } from "../../src/domain/signature.js";
import { generateKeyMaterial } from "../../src/domain/signature-schemes.js";
import { countCalls } from "../helpers/count-calls.js";

const sealer = new KeySealer(randomBytes(32));
const at = new Date();

async function subscriptionOf(scheme: SignatureScheme, rotating = false) {
  const id = `sub_${randomBytes(16).toString("hex")}`;
  const current = await generateKeyMaterial(scheme, 2048);
  const next = await generateKeyMaterial(scheme, 2048);
  const subscription: Subscription = {
    id,
    clientId: "cli_1",
    event: "Order.Created",
    url: "https://example.com/hook",
    description: "",
    enabled: true,
    signatureScheme: scheme,
    publicKeyPem: current.publicKeyPem,
    privateKeyPem: sealer.seal(current.privateKeyPem, id),
    ...(rotating
      ? {
          nextPublicKeyPem: next.publicKeyPem,
          nextPrivateKeyPem: sealer.seal(next.privateKeyPem, id),
          rotationDeadline: new Date(at.getTime() + 60_000),
        }
      : {}),
    createdAt: at,
    updatedAt: at,
  };
  return {
    subscription,
    current: current.privateKeyPem,
    next: next.privateKeyPem,
    currentPublic: current.publicKeyPem,
    nextPublic: next.publicKeyPem,
  };
}

const notification = (subscription: Subscription): Notification => ({
  id: `ntf_${randomBytes(16).toString("hex")}`,
  subscriptionId: subscription.id,
  clientId: subscription.clientId,
  event: "Order.Created",
  body: `{"Event":"Order.Created","Timestamp":"${at.toISOString()}","Name":"Zoë"}`,
  status: "pending",
  attemptCount: 0,
  createdAt: at,
  updatedAt: at,
});

test("RSA_SHA256: X-Signature over the body with X-JobId and X-JobAttempt; a retry sends the same signature", async (t) => {
  const signer = new DeliverySigner(sealer);
  const { subscription, currentPublic } = await subscriptionOf("RSA_SHA256");
  const n = notification(subscription);
  const headers = await signer.headers(n, subscription, 0);
  t.deepEqual(Object.keys(headers).sort(), ["X-JobAttempt", "X-JobId", "X-Signature"]);
  t.like(headers, { "X-JobId": n.id, "X-JobAttempt": "0" });
  t.true(verifyBody(n.body, headers["X-Signature"] as string, currentPublic));
  t.is((await signer.headers(n, subscription, 1))["X-Signature"], headers["X-Signature"]);
});

test("STANDARD_WEBHOOKS: the standardwebhooks library verifies with the secret; X-JobAttempt stays", async (t) => {
  const signer = new DeliverySigner(sealer);
  const { subscription, current } = await subscriptionOf("STANDARD_WEBHOOKS");
  const n = notification(subscription);
  const headers = await signer.headers(n, subscription, 2, at);
  t.deepEqual(Object.keys(headers).sort(), ["X-JobAttempt", "webhook-id", "webhook-signature", "webhook-timestamp"]);
  t.like(headers, { "webhook-id": n.id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "X-JobAttempt": "2" });
  t.deepEqual(new Webhook(current).verify(n.body, headers), JSON.parse(n.body));
  const later = await signer.headers(n, subscription, 3, new Date(at.getTime() + 5_000));
  t.is(later["webhook-timestamp"], String(Math.floor(at.getTime() / 1000) + 5), "each attempt signs its own time");
  t.notThrows(() => new Webhook(current).verify(n.body, later));
});

test("STANDARD_WEBHOOKS during a rotation: both secrets sign, so either verifies", async (t) => {
  const signer = new DeliverySigner(sealer);
  const { subscription, current, next } = await subscriptionOf("STANDARD_WEBHOOKS", true);
  const n = notification(subscription);
  const headers = await signer.headers(n, subscription, 0);
  t.is(headers["webhook-signature"]?.split(" ").length, 2);
  t.notThrows(() => new Webhook(current).verify(n.body, headers));
  t.notThrows(() => new Webhook(next).verify(n.body, headers));
});

/** Whether a `v1a` signature in the headers verifies with the `whpk_` key, as a receiver checks it. */
function verifiesV1a(publicKey: string, n: Notification, headers: Record<string, string>): boolean {
  const key = createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(publicKey.slice(5), "base64").toString("base64url") },
    format: "jwk",
  });
  const signed = Buffer.from(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${n.body}`);
  return (headers["webhook-signature"] ?? "")
    .split(" ")
    .some((entry) => entry.startsWith("v1a,") && verify(null, signed, key, Buffer.from(entry.slice(4), "base64")));
}

test("STANDARD_WEBHOOKS_ED25519: v1a signatures the whpk_ key verifies, both keys during a rotation", async (t) => {
  const signer = new DeliverySigner(sealer);
  const { subscription, currentPublic, nextPublic } = await subscriptionOf("STANDARD_WEBHOOKS_ED25519", true);
  const n = notification(subscription);
  const headers = await signer.headers(n, subscription, 1);
  t.like(headers, { "webhook-id": n.id, "X-JobAttempt": "1" });
  t.regex(headers["webhook-signature"] ?? "", /^v1a,\S+ v1a,\S+$/);
  t.true(verifiesV1a(currentPublic, n, headers));
  t.true(verifiesV1a(nextPublic, n, headers));
  const { nextPublicKeyPem: _p, nextPrivateKeyPem: _k, rotationDeadline: _d, ...settled } = subscription;
  const alone = await signer.headers(n, settled, 2);
  t.true(verifiesV1a(currentPublic, n, alone));
  t.false(verifiesV1a(nextPublic, n, alone));
});

test("a key sealed for another subscription does not open: no headers", async (t) => {
  const signer = new DeliverySigner(sealer);
  for (const scheme of ["RSA_SHA256", "STANDARD_WEBHOOKS", "STANDARD_WEBHOOKS_ED25519"] as const) {
    const { subscription } = await subscriptionOf(scheme);
    const moved = { ...subscription, id: `sub_${randomBytes(16).toString("hex")}` };
    await t.throwsAsync(signer.headers(notification(moved), moved, 0), undefined, scheme);
  }
});

test("a subscription's keys open once, each read of the subscription bringing its own copy; a rotated-in key opens, a rotated-out one is let go", async (t) => {
  const counting = new KeySealer(randomBytes(32));
  const opened = countCalls(counting, "open");
  const signer = new DeliverySigner(counting);
  const { subscription, current, next, nextPublic } = await subscriptionOf("RSA_SHA256");
  const sealedCurrent = counting.seal(current, subscription.id);
  // A fresh read: equal text in a new string each time.
  const read = (sealed: string): Subscription => ({ ...subscription, privateKeyPem: [...sealed].join("") });
  for (let i = 0; i < 5; i++) await signer.headers(notification(subscription), read(sealedCurrent), 0);
  t.is(opened.calls, 1);
  const rotated = read(counting.seal(next, subscription.id));
  const n = notification(subscription);
  t.true(verifyBody(n.body, (await signer.headers(n, rotated, 0))["X-Signature"] as string, nextPublic));
  await signer.headers(notification(subscription), rotated, 0);
  t.is(opened.calls, 2);
});
