import { createPrivateKey } from "node:crypto";
import test from "ava";
import { Webhook } from "standardwebhooks";
import {
  createReceiver,
  InvalidSignatureError,
  MalformedHeaderError,
  MissingHeaderError,
  SIGNED_SEND_TIME_TOLERANCE_MS,
  StaleTimestampError,
  type VerifyOptions,
  verifyNotification,
} from "../../packages/receiver/src/index.js";
import { buildNotificationBody } from "../../src/domain/notification-body.js";
import { generateEd25519KeyPair, generateSecret, secretBytes, standardWebhooksHeaders } from "../../src/domain/standard-webhooks.js";

// Deliveries signed by the `standardwebhooks` library (and, for two signatures, by the service's own signing code).

const current = generateSecret();
const next = generateSecret();
const ACCEPTED = new Date("2026-11-21T22:52:13.940Z");
const SENT = new Date("2026-11-22T04:00:00.000Z");
const JOB_ID = "ntf_5653be6258d34722857605be2a85a7cc";
const body = buildNotificationBody("Order.Shipped", { OrderId: "ord_1", Carrier: "DHL" }, ACCEPTED);

function delivery(options: { secret?: string; attempt?: string; at?: Date } = {}): VerifyOptions & { headers: Record<string, string> } {
  const sentAt = options.at ?? SENT;
  return {
    body: Buffer.from(body),
    headers: {
      "webhook-id": JOB_ID,
      "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
      "webhook-signature": new Webhook(options.secret ?? current).sign(JOB_ID, sentAt, body),
      "x-jobattempt": options.attempt ?? "0",
    },
    keys: [current],
    scheme: "STANDARD_WEBHOOKS",
    now: () => SENT.getTime() + 1_000,
  };
}

test("a Standard Webhooks delivery verifies: webhook-id is the job, X-JobAttempt the attempt", (t) => {
  t.deepEqual(verifyNotification(delivery({ attempt: "4" })), {
    event: "Order.Shipped",
    timestamp: ACCEPTED,
    jobId: JOB_ID,
    attempt: 4,
    payload: { OrderId: "ord_1", Carrier: "DHL" },
    keyIndex: 0,
  });
});

test("during a rotation both signatures are sent: either secret verifies, keyIndex tells which", (t) => {
  const headers = standardWebhooksHeaders([secretBytes(current), secretBytes(next)], JOB_ID, Math.floor(SENT.getTime() / 1000), body);
  const rotating = { ...delivery(), headers: { ...headers, "x-jobattempt": "0" } };
  t.is(verifyNotification({ ...rotating, keys: [current] }).keyIndex, 0);
  t.is(verifyNotification({ ...rotating, keys: [next] }).keyIndex, 0);
  t.is(verifyNotification({ ...rotating, keys: [generateSecret(), next] }).keyIndex, 1);
  t.is(verifyNotification({ ...delivery({ secret: next }), keys: [current, next] }).keyIndex, 1);
});

test("a changed body, id or timestamp, or another secret, is an InvalidSignatureError", (t) => {
  const options = delivery();
  const refused = (changed: VerifyOptions) => t.throws(() => verifyNotification(changed), { instanceOf: InvalidSignatureError });
  refused({ ...options, body: Buffer.from(body.replace("DHL", "UPS")) });
  refused({ ...options, headers: { ...options.headers, "webhook-id": "ntf_other" } });
  refused({ ...options, headers: { ...options.headers, "webhook-timestamp": String(Number(options.headers["webhook-timestamp"]) - 1) } });
  refused({ ...options, headers: { ...options.headers, "webhook-signature": `v1a,${options.headers["webhook-signature"]?.slice(3)}` } });
  refused({ ...options, keys: [next] });
});

test("missing or malformed headers are refused", (t) => {
  const options = delivery();
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature", "x-jobattempt"]) {
    const { [name]: _dropped, ...rest } = options.headers;
    t.throws(() => verifyNotification({ ...options, headers: rest }), { instanceOf: MissingHeaderError }, name);
  }
  t.throws(() => verifyNotification({ ...options, headers: { ...options.headers, "webhook-timestamp": "soon" } }), {
    instanceOf: MalformedHeaderError,
  });
});

test("the signed send time is held to 5 minutes by default, whatever the attempt", (t) => {
  const at = (ms: number) => () => SENT.getTime() + ms;
  t.is(SIGNED_SEND_TIME_TOLERANCE_MS, 5 * 60_000);
  t.is(verifyNotification({ ...delivery({ attempt: "5" }), now: at(SIGNED_SEND_TIME_TOLERANCE_MS) }).attempt, 5);
  const stale = t.throws(() => verifyNotification({ ...delivery(), now: at(SIGNED_SEND_TIME_TOLERANCE_MS + 1_000) }), {
    instanceOf: StaleTimestampError,
  });
  t.deepEqual(stale?.timestamp, SENT);
  t.truthy(verifyNotification({ ...delivery(), now: at(3_600_000), tolerance: 2 * 3_600_000 }), "a tolerance given is used");
});

test("createReceiver: STANDARD_WEBHOOKS takes whsec_ secrets only, and processes each webhook-id once", async (t) => {
  t.throws(() => createReceiver({ scheme: "STANDARD_WEBHOOKS", keys: ["-----BEGIN PUBLIC KEY-----"], onNotification: () => {} }), {
    instanceOf: TypeError,
    message: /whsec_/,
  });
  t.throws(() => createReceiver({ keys: [current], onNotification: () => {} }), { instanceOf: TypeError }, "a secret is no PEM key");
  const seen: string[] = [];
  const receiver = createReceiver({
    scheme: "STANDARD_WEBHOOKS",
    keys: [current],
    onNotification: (notification) => {
      seen.push(notification.jobId);
    },
    now: () => SENT.getTime(),
  });
  const { body: bytes, headers } = delivery();
  t.is((await receiver.handle({ body: bytes, headers })).status, 200);
  t.like(JSON.parse((await receiver.handle({ body: bytes, headers: { ...headers, "x-jobattempt": "1" } })).body), { status: "duplicate" });
  t.is((await receiver.handle({ body: bytes, headers: { ...headers, "webhook-signature": "v1,AAAA" } })).status, 401);
  t.deepEqual(seen, [JOB_ID]);
});

test("Ed25519: whpk_ public keys verify v1a signatures, either key during a rotation; a v1 secret does not", async (t) => {
  const [old, fresh] = await Promise.all([generateEd25519KeyPair(), generateEd25519KeyPair()]);
  const sign = (...pems: string[]) => ({
    ...delivery(),
    keys: [old.publicKey],
    headers: {
      ...standardWebhooksHeaders(
        pems.map((pem) => createPrivateKey(pem)),
        JOB_ID,
        Math.floor(SENT.getTime() / 1000),
        body,
      ),
      "x-jobattempt": "2",
    },
  });
  t.like(verifyNotification(sign(old.privateKeyPem)), { jobId: JOB_ID, attempt: 2, keyIndex: 0 });
  const rotating = sign(old.privateKeyPem, fresh.privateKeyPem);
  t.is(verifyNotification({ ...rotating, keys: [fresh.publicKey] }).keyIndex, 0);
  t.is(verifyNotification({ ...rotating, keys: [current, fresh.publicKey] }).keyIndex, 1, "secrets and public keys mix");
  t.throws(() => verifyNotification({ ...sign(fresh.privateKeyPem), keys: [old.publicKey] }), { instanceOf: InvalidSignatureError });
  const signed = sign(old.privateKeyPem);
  const truncated = { ...signed.headers, "webhook-signature": "v1a,AAAA v1,AAAA" };
  t.throws(() => verifyNotification({ ...signed, headers: truncated }), { instanceOf: InvalidSignatureError });
  t.throws(() => verifyNotification({ ...signed, keys: ["whpk_AAAA"] }), { instanceOf: TypeError, message: /whpk_/ });
});
