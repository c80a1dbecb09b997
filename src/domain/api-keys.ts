import { createHash, randomBytes } from "node:crypto";

/** A new API key: shown once, stored only as its hash. */
export function generateApiKey(): string {
  return `whk_${randomBytes(32).toString("base64url")}`;
}

/**
 * API keys are 256 random bits, so one SHA-256 is a sufficient, constant-cost
 * hash: no dictionary to stretch against, and lookups stay one index probe.
 */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}
