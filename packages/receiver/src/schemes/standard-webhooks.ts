import { createHmac, timingSafeEqual } from "node:crypto";
import { InvalidSignatureError, MalformedHeaderError } from "../errors.js";
import { type HeaderLookup, requireHeader } from "../headers.js";
import type { KeyInput } from "../keys.js";
import type { SchemeResult, SignatureScheme } from "./scheme.js";
import { JOB_ATTEMPT_HEADER, MAX_ATTEMPT } from "./x-signature.js";

/** Standard Webhooks' headers (standardwebhooks.com). */
export const WEBHOOK_ID_HEADER = "webhook-id";
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";

const SECRET_PREFIX = "whsec_";
const ATTEMPT = /^\d$/;
const SECONDS = /^\d{1,12}$/;

/** The key bytes of a `whsec_…` secret; anything else is the receiver's configuration, a TypeError. */
function secretBytes(key: KeyInput): Buffer {
  const bytes =
    typeof key === "string" && key.startsWith(SECRET_PREFIX) ? Buffer.from(key.slice(SECRET_PREFIX.length), "base64") : undefined;
  if (!bytes || bytes.length < 24 || bytes.length > 64) {
    throw new TypeError("keys: expected the subscription's Standard Webhooks secret, whsec_ and the Base64 of 24 to 64 bytes");
  }
  return bytes;
}

/**
 * A subscription created with `signatureScheme: STANDARD_WEBHOOKS`:
 * `webhook-signature` holds space-separated `v1,<Base64 HMAC-SHA256>` of
 * `webhook-id.webhook-timestamp.body` (two during a key rotation), keyed with
 * the `whsec_` secret. The id and the send time are signed; `X-JobAttempt` is not.
 */
export const standardWebhooksScheme: SignatureScheme = {
  checkKeys(keys: readonly KeyInput[]): void {
    for (const key of keys) secretBytes(key);
  },

  verify(body: Uint8Array, header: HeaderLookup, keys: readonly KeyInput[]): SchemeResult {
    const jobId = requireHeader(header, WEBHOOK_ID_HEADER).trim();
    const timestampText = requireHeader(header, WEBHOOK_TIMESTAMP_HEADER).trim();
    const signatures = requireHeader(header, WEBHOOK_SIGNATURE_HEADER)
      .split(" ")
      .flatMap((entry) => (entry.startsWith("v1,") ? [Buffer.from(entry.slice(3), "base64")] : []));
    const attemptText = requireHeader(header, JOB_ATTEMPT_HEADER).trim();
    if (!SECONDS.test(timestampText)) throw new MalformedHeaderError(WEBHOOK_TIMESTAMP_HEADER, "must be Unix seconds");
    if (!ATTEMPT.test(attemptText) || Number(attemptText) > MAX_ATTEMPT) {
      throw new MalformedHeaderError(JOB_ATTEMPT_HEADER, `must be an integer from 0 to ${MAX_ATTEMPT}`);
    }
    const keyIndex = keys.findIndex((key) => {
      const expected = createHmac("sha256", secretBytes(key)).update(`${jobId}.${timestampText}.`).update(body).digest();
      return signatures.some((signature) => signature.length === expected.length && timingSafeEqual(signature, expected));
    });
    if (keyIndex < 0) {
      const which = keys.length === 1 ? "the secret" : `any of the ${keys.length} secrets`;
      throw new InvalidSignatureError(`no v1 signature in ${WEBHOOK_SIGNATURE_HEADER} verifies with ${which}`);
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
