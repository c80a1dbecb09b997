import { createPrivateKey, type KeyObject } from "node:crypto";
import type { KeySealer } from "../domain/key-sealing.js";
import type { Notification, Subscription } from "../domain/model.js";
import { signBody } from "../domain/signature.js";
import { type SigningKey, secretBytes, standardWebhooksHeaders } from "../domain/standard-webhooks.js";

const KEY_CACHE_LIMIT = 10_000;
/** Signatures kept for notifications awaiting a retry in this process; the oldest go first. */
const SIGNATURE_CACHE_LIMIT = 10_000;

/** Sets `key` as the newest entry of `map`, dropping the oldest once `limit` entries are held. */
export function remember<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  map.delete(key);
  if (map.size >= limit) map.delete(map.keys().next().value as K);
  map.set(key, value);
}

/**
 * The signature headers of one attempt, in the subscription's scheme (with
 * its rotation settled). Throws when a sealed key does not open.
 */
export class DeliverySigner {
  /**
   * Unsealing and parsing cost more than signing: the keys opened for each
   * subscription, with the sealed text each opened from (its current and
   * next key are both in use during a Standard Webhooks rotation). Looked up
   * by subscription id: a sealed key is about 2 KB, and a fresh read's copy
   * of it would be hashed anew at every attempt.
   */
  readonly #opened = new Map<string, ReadonlyArray<{ sealed: string; key: KeyObject | Buffer }>>();
  /**
   * An RSA retry sends the signature its notification's first attempt made,
   * as long as the subscription's key is the same KeyObject (a rotation or a
   * new key makes a new one, and a new signature). RSA PKCS#1 v1.5 is
   * deterministic: the bytes are those a new signing would give.
   */
  readonly #signatures = new Map<string, { key: KeyObject; signature: string }>();

  constructor(private readonly sealer: KeySealer) {}

  async headers(
    notification: Notification,
    subscription: Subscription,
    attempt: number,
    now = new Date(),
  ): Promise<Record<string, string>> {
    const { signatureScheme, privateKeyPem, nextPrivateKeyPem } = subscription;
    if (signatureScheme !== "RSA_SHA256") {
      // Every key in force signs: during a rotation a receiver holding either key verifies.
      const keys = [privateKeyPem, ...(nextPrivateKeyPem ? [nextPrivateKeyPem] : [])].map(
        (sealed): SigningKey => this.#open(subscription, sealed),
      );
      return {
        ...standardWebhooksHeaders(keys, notification.id, Math.floor(now.getTime() / 1000), notification.body),
        "X-JobAttempt": String(attempt),
      };
    }
    return {
      "X-Signature": await this.#rsaSignature(notification, this.#open(subscription, privateKeyPem) as KeyObject),
      "X-JobId": notification.id,
      "X-JobAttempt": String(attempt),
    };
  }

  /** The notification needs no more attempts. */
  forget(notificationId: string): void {
    this.#signatures.delete(notificationId);
  }

  async #rsaSignature(notification: Notification, key: KeyObject): Promise<string> {
    const kept = this.#signatures.get(notification.id);
    if (kept?.key === key) return kept.signature;
    const signature = await signBody(notification.body, key);
    remember(this.#signatures, notification.id, { key, signature }, SIGNATURE_CACHE_LIMIT);
    return signature;
  }

  /** A `whsec_` secret opens to its bytes; a PEM private key (RSA, Ed25519) to a KeyObject. */
  #open(subscription: Subscription, sealed: string): KeyObject | Buffer {
    const opened = this.#opened.get(subscription.id) ?? [];
    const cached = opened.find((entry) => entry.sealed === sealed);
    if (cached) return cached.key;
    const text = this.sealer.open(sealed, subscription.id);
    const key = subscription.signatureScheme === "STANDARD_WEBHOOKS" ? secretBytes(text) : createPrivateKey(text);
    // Only keys still in force stay: a rotated-out key is never asked for again.
    const inForce = [subscription.privateKeyPem, subscription.nextPrivateKeyPem];
    const kept = opened.filter((entry) => inForce.includes(entry.sealed));
    remember(this.#opened, subscription.id, [...kept, { sealed, key }], KEY_CACHE_LIMIT);
    return key;
  }
}
