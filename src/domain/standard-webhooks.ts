import { createHash, createHmac, generateKeyPair, type KeyObject, randomBytes, sign } from "node:crypto";
import { promisify } from "node:util";

const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * Standard Webhooks (standardwebhooks.com): each attempt carries
 * `webhook-id`, `webhook-timestamp` and `webhook-signature`, the last holding
 * signatures of `id.timestamp.body`: `v1,` + Base64 HMAC-SHA256 under a
 * `whsec_` secret (what every Standard Webhooks library verifies), or `v1a,`
 * + Base64 Ed25519 by a key whose public half is given out as `whpk_`.
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

/** The public key as Standard Webhooks writes it: `whpk_` and the Base64 of the raw 32 bytes. */
export const PUBLIC_KEY_PREFIX = "whpk_";

/** A fresh Ed25519 pair: the `whpk_…` public key and the PKCS#8 PEM private key. */
export async function generateEd25519KeyPair(): Promise<{ publicKey: string; privateKeyPem: string }> {
  const { publicKey, privateKey } = await generateKeyPairAsync("ed25519", {
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  // An Ed25519 SPKI is a fixed 12-byte header and the 32 raw bytes of the key.
  return { publicKey: PUBLIC_KEY_PREFIX + publicKey.subarray(-32).toString("base64"), privateKeyPem: privateKey };
}

/**
 * A signing key: the bytes of a `whsec_` secret sign `v1` (HMAC-SHA256), an
 * Ed25519 private KeyObject signs `v1a`.
 */
export type SigningKey = Uint8Array | KeyObject;

/** One signature of `id.timestamp.body`, with its version prefix. */
export function signWith(key: SigningKey, id: string, timestampSeconds: number, body: string): string {
  const content = Buffer.from(`${id}.${timestampSeconds}.${body}`, "utf8");
  if (key instanceof Uint8Array) return `v1,${createHmac("sha256", key).update(content).digest("base64")}`;
  return `v1a,${sign(null, content, key).toString("base64")}`;
}

/**
 * The three headers of one attempt. Each key signs; their signatures are
 * space-separated, which the specification allows so that a receiver holding
 * either key verifies during a rotation.
 */
export function standardWebhooksHeaders(
  keys: readonly SigningKey[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  if (keys.length === 0) throw new Error("no key to sign with");
  return {
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestampSeconds),
    [WEBHOOK_SIGNATURE_HEADER]: keys.map((key) => signWith(key, id, timestampSeconds, body)).join(" "),
  };
}
