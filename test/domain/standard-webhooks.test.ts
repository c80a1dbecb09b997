import { createPrivateKey, createPublicKey, verify } from "node:crypto";
import test from "ava";
import { Webhook } from "standardwebhooks";
import {
  generateEd25519KeyPair,
  generateSecret,
  secretBytes,
  secretFingerprint,
  signWith,
  standardWebhooksHeaders,
} from "../../src/domain/standard-webhooks.js";

const body = '{"Event":"Order.Created","Timestamp":"2026-11-23T02:00:00.000Z","Name":"Zoë"}';
const now = () => Math.floor(Date.now() / 1000);

test("a secret is whsec_ and the Base64 of 32 random bytes", (t) => {
  const secret = generateSecret();
  t.regex(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.is(secretBytes(secret).length, 32);
  t.not(generateSecret(), secret);
  t.throws(() => secretBytes("c2VjcmV0"), { message: /starts with whsec_/ });
  t.throws(() => secretBytes(`whsec_${Buffer.alloc(8).toString("base64")}`), { message: /24 to 64 bytes/ });
});

test("the fingerprint tells secrets apart and does not contain them", (t) => {
  const secret = generateSecret();
  t.regex(secretFingerprint(secret), /^whsec-sha256:[0-9a-f]{64}$/);
  t.is(secretFingerprint(secret), secretFingerprint(secret));
  t.not(secretFingerprint(generateSecret()), secretFingerprint(secret));
  t.false(secretFingerprint(secret).includes(secret.slice(6, 20)));
});

test("the standardwebhooks library verifies the headers, and refuses a changed body, id or timestamp", (t) => {
  const secret = generateSecret();
  const timestamp = now();
  const headers = standardWebhooksHeaders([secretBytes(secret)], "ntf_1", timestamp, body);
  t.deepEqual(Object.keys(headers), ["webhook-id", "webhook-timestamp", "webhook-signature"]);
  t.is(headers["webhook-id"], "ntf_1");
  t.is(headers["webhook-timestamp"], String(timestamp));
  t.regex(headers["webhook-signature"] ?? "", /^v1,[A-Za-z0-9+/]{43}=$/);
  const webhook = new Webhook(secret);
  t.deepEqual(webhook.verify(body, headers), JSON.parse(body));
  t.is(headers["webhook-signature"], webhook.sign("ntf_1", new Date(timestamp * 1000), body), "the library's own signature");
  t.throws(() => webhook.verify(body.replace("Zoë", "Zoe"), headers), { message: /No matching signature/ });
  t.throws(() => webhook.verify(body, { ...headers, "webhook-id": "ntf_2" }), { message: /No matching signature/ });
  t.throws(() => webhook.verify(body, { ...headers, "webhook-timestamp": String(timestamp - 1) }), { message: /No matching signature/ });
  t.throws(() => new Webhook(generateSecret()).verify(body, headers), { message: /No matching signature/ });
});

test("with two keys both signatures are sent, space-separated, and either secret verifies", (t) => {
  const [current, next] = [generateSecret(), generateSecret()];
  const headers = standardWebhooksHeaders([secretBytes(current), secretBytes(next)], "ntf_2", now(), body);
  const signatures = headers["webhook-signature"]?.split(" ") ?? [];
  t.is(signatures.length, 2);
  t.is(signatures[1], signWith(secretBytes(next), "ntf_2", Number(headers["webhook-timestamp"]), body));
  t.notThrows(() => new Webhook(current).verify(body, headers));
  t.notThrows(() => new Webhook(next).verify(body, headers));
  t.throws(() => new Webhook(generateSecret()).verify(body, headers));
  t.throws(() => standardWebhooksHeaders([], "ntf_3", now(), body), { message: /no key/ });
});

test("Ed25519: a whpk_ public key of 32 raw bytes, and v1a signatures it verifies", async (t) => {
  const { publicKey, privateKeyPem } = await generateEd25519KeyPair();
  t.regex(publicKey, /^whpk_[A-Za-z0-9+/]{43}=$/);
  // The receiver's view: the raw key from whpk_, as a JWK, nothing of the service's encoding.
  const verifier = createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(publicKey.slice(5), "base64").toString("base64url") },
    format: "jwk",
  });
  const timestamp = now();
  const headers = standardWebhooksHeaders([createPrivateKey(privateKeyPem)], "ntf_4", timestamp, body);
  const [version, signature] = (headers["webhook-signature"] ?? "").split(",");
  t.is(version, "v1a");
  const signed = Buffer.from(`ntf_4.${timestamp}.${body}`);
  t.true(verify(null, signed, verifier, Buffer.from(signature ?? "", "base64")));
  t.false(verify(null, Buffer.from(`ntf_5.${timestamp}.${body}`), verifier, Buffer.from(signature ?? "", "base64")));
  t.throws(() => new Webhook(generateSecret()).verify(body, headers), { message: /No matching signature/ }, "no v1 to match");
});
