import { createPublicKey, type KeyObject } from "node:crypto";

/**
 * A key as the subscription API returns it (`signatureKey`, `nextSignatureKey`):
 * a PEM SPKI public key or a `KeyObject` made from one; with the
 * STANDARD_WEBHOOKS scheme, the `whsec_…` secret.
 */
export type KeyInput = string | KeyObject;

/** Parsed keys by their PEM: a receiver hands the same few keys over on every request. */
const parsed = new Map<string, KeyObject>();
const MAX_PARSED = 64;

/** The key as a public `KeyObject`; a text that is no public key is a TypeError, not a refusal: it is the receiver's configuration. */
export function publicKeyOf(key: KeyInput): KeyObject {
  if (typeof key !== "string") {
    if (key.type !== "public") throw new TypeError(`keys: expected a public key, got a ${key.type} key`);
    return key;
  }
  const cached = parsed.get(key);
  if (cached) return cached;
  let keyObject: KeyObject;
  try {
    keyObject = createPublicKey(key);
  } catch (error) {
    throw new TypeError(`keys: not a PEM public key (the subscription's signatureKey): ${(error as Error).message}`);
  }
  if (parsed.size >= MAX_PARSED) parsed.clear();
  parsed.set(key, keyObject);
  return keyObject;
}

/**
 * Checks a key list once, where the receiver is configured, so a typo fails at
 * start and not per request. Whether each key suits the scheme is the
 * scheme's to say (`SignatureScheme.checkKeys`).
 */
export function assertKeys(keys: readonly KeyInput[]): void {
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new TypeError("keys: give at least one key (the subscription's signatureKey; during a rotation also nextSignatureKey)");
  }
}
