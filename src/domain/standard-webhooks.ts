import { createHash, createHmac, randomBytes } from "node:crypto";

/**
 * Standard Webhooks (standardwebhooks.com), symmetric signatures: each
 * attempt carries `webhook-id`, `webhook-timestamp` and `webhook-signature`,
 * the last being `v1,` + Base64 HMAC-SHA256 over `id.timestamp.body` under
 * the subscription's secret. Every Standard Webhooks library verifies these.
 */

export const WEBHOOK_ID_HEADER = "webhook-id";
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";

/** How Standard Webhooks secrets are written: this prefix, then the Base64 of the key bytes. */
export const SECRET_PREFIX = "whsec_";
/** The specification asks for 24 to 64 bytes; 32 match the HMAC-SHA256 block's security. */
const SECRET_BYTES = 32;

/** A fresh `whsec_…` secret. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64");
}

/** The key bytes of a `whsec_…` secret. */
export function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error(`a Standard Webhooks secret starts with ${SECRET_PREFIX}`);
  const bytes = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  if (bytes.length < 24 || bytes.length > 64) throw new Error("a Standard Webhooks secret holds 24 to 64 bytes");
  return bytes;
}

/**
 * What the store keeps in the clear for a secret, in place of a public key:
 * enough to tell two secrets apart, nothing to sign with (SHA-256 of 256
 * random bits). The secret itself is stored sealed.
 */
export function secretFingerprint(secret: string): string {
  return `whsec-sha256:${createHash("sha256").update(secretBytes(secret)).digest("hex")}`;
}

/** One `v1,<Base64 HMAC-SHA256>` signature of `id.timestamp.body`. */
export function signWithSecret(key: Uint8Array, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", key).update(`${id}.${timestampSeconds}.`, "utf8").update(body, "utf8").digest("base64");
  return `v1,${mac}`;
}

/**
 * The three headers of one attempt. Each key signs; their signatures are
 * space-separated, which the specification allows so that a receiver holding
 * either secret verifies during a rotation.
 */
export function standardWebhooksHeaders(
  keys: readonly Uint8Array[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  if (keys.length === 0) throw new Error("no key to sign with");
  return {
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestampSeconds),
    [WEBHOOK_SIGNATURE_HEADER]: keys.map((key) => signWithSecret(key, id, timestampSeconds, body)).join(" "),
  };
}
