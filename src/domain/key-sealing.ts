import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const PREFIX = "sealed:v1:";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypts private signing keys at rest with AES-256-GCM under the master
 * key, bound to the subscription id (as associated data) so a sealed key
 * copied onto another row does not open. A database dump alone signs nothing.
 */
export class KeySealer {
  constructor(private readonly masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error("the signing master key must be 32 bytes");
  }

  seal(privateKeyPem: string, subscriptionId: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.masterKey, iv);
    cipher.setAAD(Buffer.from(subscriptionId, "utf8"));
    const ciphertext = Buffer.concat([cipher.update(privateKeyPem, "utf8"), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString("base64");
  }

  open(sealed: string, subscriptionId: string): string {
    if (!sealed.startsWith(PREFIX)) throw new Error("signing key is not sealed with this service's format");
    const raw = Buffer.from(sealed.slice(PREFIX.length), "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.masterKey, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(subscriptionId, "utf8"));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}

/** `SIGNING_MASTER_KEY`: 64 hex characters or base64 of 32 bytes. */
export function parseMasterKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64");
  return key.length === 32 ? key : undefined;
}
