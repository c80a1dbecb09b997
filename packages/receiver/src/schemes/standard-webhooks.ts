import { createHmac, createPublicKey, type KeyObject, timingSafeEqual, verify } from "node:crypto";
import { InvalidSignatureError, MalformedHeaderError } from "../errors.js";
import { type HeaderLookup, requireHeader } from "../headers.js";
import type { KeyInput } from "../keys.js";
import type { SchemeResult, SignatureScheme } from "./scheme.js";
import { JOB_ATTEMPT_HEADER, MAX_ATTEMPT } from "./x-signature.js";

/** Standard Webhooks' headers (standardwebhooks.com). */
export const WEBHOOK_ID_HEADER = "webhook-id";
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";

const ATTEMPT = /^\d$/;
const SECONDS = /^\d{1,12}$/;

/** A `whsec_` secret checks `v1` (HMAC-SHA256) signatures; a `whpk_` public key checks `v1a` (Ed25519). */
type Verifier = { version: "v1"; secret: Buffer } | { version: "v1a"; publicKey: KeyObject };

interface Signature {
  version: string;
  bytes: Buffer;
}

/** Parsed keys by their text: a receiver hands the same few keys over on every request. */
const parsed = new Map<string, Verifier>();
const MAX_PARSED = 64;

/** The key as a verifier; anything but a `whsec_` or `whpk_` key is the receiver's configuration, a TypeError. */
function verifierOf(key: KeyInput): Verifier {
  const cached = typeof key === "string" ? parsed.get(key) : undefined;
  if (cached) return cached;
  const bytes = typeof key === "string" ? Buffer.from(key.slice(key.indexOf("_") + 1), "base64") : Buffer.alloc(0);
  let verifier: Verifier;
  if (typeof key === "string" && key.startsWith("whsec_") && bytes.length >= 24 && bytes.length <= 64) {
    verifier = { version: "v1", secret: bytes };
  } else if (typeof key === "string" && key.startsWith("whpk_") && bytes.length === 32) {
    const jwk = { kty: "OKP", crv: "Ed25519", x: bytes.toString("base64url") };
    verifier = { version: "v1a", publicKey: createPublicKey({ key: jwk, format: "jwk" }) };
  } else {
    throw new TypeError(
      "keys: expected the subscription's signatureKey, a Standard Webhooks secret (whsec_, 24 to 64 bytes) or public key (whpk_, 32 bytes)",
    );
  }
  if (parsed.size >= MAX_PARSED) parsed.clear();
  parsed.set(key, verifier);
  return verifier;
}

/** Whether one of the request's signatures of `signed` verifies with the key. */
function verifies(verifier: Verifier, signed: Buffer, signatures: readonly Signature[]): boolean {
  if (verifier.version === "v1") {
    const expected = createHmac("sha256", verifier.secret).update(signed).digest();
    return signatures.some((s) => s.version === "v1" && s.bytes.length === expected.length && timingSafeEqual(s.bytes, expected));
  }
  return signatures.some((s) => s.version === "v1a" && verify(null, signed, verifier.publicKey, s.bytes));
}

/**
 * A subscription created with `signatureScheme: STANDARD_WEBHOOKS` (or
 * `STANDARD_WEBHOOKS_ED25519`): `webhook-signature` holds space-separated
 * `v1,<Base64 HMAC-SHA256>` (`v1a,<Base64 Ed25519>`) signatures of
 * `webhook-id.webhook-timestamp.body`, two during a key rotation; the keys are
 * `whsec_` secrets (`whpk_` public keys). The id and the send time are
 * signed; `X-JobAttempt` is not.
 */
export const standardWebhooksScheme: SignatureScheme = {
  checkKeys(keys: readonly KeyInput[]): void {
    for (const key of keys) verifierOf(key);
  },

  verify(body: Uint8Array, header: HeaderLookup, keys: readonly KeyInput[]): SchemeResult {
    const jobId = requireHeader(header, WEBHOOK_ID_HEADER).trim();
    const timestampText = requireHeader(header, WEBHOOK_TIMESTAMP_HEADER).trim();
    const signatures = requireHeader(header, WEBHOOK_SIGNATURE_HEADER)
      .split(" ")
      .map((entry): Signature => {
        const comma = entry.indexOf(",");
        return { version: entry.slice(0, Math.max(comma, 0)), bytes: Buffer.from(entry.slice(comma + 1), "base64") };
      });
    const attemptText = requireHeader(header, JOB_ATTEMPT_HEADER).trim();
    if (!SECONDS.test(timestampText)) throw new MalformedHeaderError(WEBHOOK_TIMESTAMP_HEADER, "must be Unix seconds");
    if (!ATTEMPT.test(attemptText) || Number(attemptText) > MAX_ATTEMPT) {
      throw new MalformedHeaderError(JOB_ATTEMPT_HEADER, `must be an integer from 0 to ${MAX_ATTEMPT}`);
    }
    const signed = Buffer.concat([Buffer.from(`${jobId}.${timestampText}.`), body]);
    const keyIndex = keys.findIndex((key) => verifies(verifierOf(key), signed, signatures));
    if (keyIndex < 0) {
      const which = keys.length === 1 ? "the key" : `any of the ${keys.length} keys`;
      throw new InvalidSignatureError(`no signature in ${WEBHOOK_SIGNATURE_HEADER} verifies with ${which}`);
    }
    return {
      keyIndex,
      jobId,
      attempt: Number(attemptText),
      headersSigned: true,
      signedSendTime: new Date(Number(timestampText) * 1000),
    };
  },
};
