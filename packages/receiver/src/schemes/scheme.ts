import type { HeaderLookup } from "../headers.js";
import type { KeyInput } from "../keys.js";

/**
 * How one signing scheme authenticates a request. The service signs with
 * `X_SIGNATURE` today; a scheme such as Standard Webhooks (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature` over `id.timestamp.body`) would be
 * one more implementation of this interface and one more entry in `SCHEMES`,
 * leaving verification, tolerance and de-duplication as they are.
 */
export interface SignatureScheme {
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
   * Whether the signature covers `jobId` and `attempt`. X-Signature signs the
   * body only, so both can be forged on a replayed body; a scheme that signs
   * them (Standard Webhooks signs its id) says so here.
   */
  headersSigned: boolean;
  /**
   * The send time, when the scheme signs one per attempt (Standard Webhooks'
   * `webhook-timestamp`): the tolerance then applies to it. Undefined for
   * X-Signature, whose only time is the body's `Timestamp`.
   */
  signedSendTime?: Date;
}
