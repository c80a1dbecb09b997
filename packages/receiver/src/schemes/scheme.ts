import type { HeaderLookup } from "../headers.js";
import type { KeyInput } from "../keys.js";

/**
 * How one signing scheme authenticates a request: `X_SIGNATURE` (the
 * service's default) and `STANDARD_WEBHOOKS` each implement it, leaving
 * verification, tolerance and de-duplication to the rest of the receiver.
 */
export interface SignatureScheme {
  /** Throws a TypeError for a key this scheme cannot verify with, where the receiver is configured. */
  checkKeys(keys: readonly KeyInput[]): void;
  /**
   * Reads the scheme's headers, verifies the signature over the raw body with
   * each key in turn, and says what the request claims. Throws
   * MissingHeaderError, MalformedHeaderError or InvalidSignatureError.
   */
  verify(body: Uint8Array, header: HeaderLookup, keys: readonly KeyInput[]): SchemeResult;
}

export interface SchemeResult {
  /** Index in `keys` of the key that verified: tells a rotation's old key from the new one. */
  keyIndex: number;
  /** The job id (`X-JobId`): the same on every attempt of one notification. */
  jobId: string;
  /** The attempt number (`X-JobAttempt`): 0, then 1..5 for retries. */
  attempt: number;
  /**
   * Whether the signature covers `jobId`. X-Signature signs the body only,
   * so the job headers can be forged on a replayed body; Standard Webhooks
   * signs its id (not the attempt).
   */
  headersSigned: boolean;
  /**
   * The send time, when the scheme signs one per attempt (Standard Webhooks'
   * `webhook-timestamp`): the tolerance then applies to it. Undefined for
   * X-Signature, whose only time is the body's `Timestamp`.
   */
  signedSendTime?: Date;
}
