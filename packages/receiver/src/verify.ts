import { assertFresh, assertTolerance, DEFAULT_TOLERANCE_MS, SIGNED_SEND_TIME_TOLERANCE_MS, type Tolerance } from "./freshness.js";
import { type HeadersInput, headerLookup } from "./headers.js";
import type { KeyInput } from "./keys.js";
import { type Payload, parseBody } from "./notification.js";
import { type SchemeName, schemeNamed } from "./schemes/index.js";

export interface VerifyOptions {
  /** The raw request body, byte for byte as it arrived: never JSON re-serialised from a parsed object. */
  body: Uint8Array;
  headers: HeadersInput;
  /** Every key that may sign: the subscription's `signatureKey`, and during a rotation its `nextSignatureKey`. */
  keys: readonly KeyInput[];
  /**
   * Maximum age in milliseconds, or false for any age: of the body's
   * `Timestamp` with X_SIGNATURE (default 30 hours, for every attempt), of the
   * attempt's signed `webhook-timestamp` with STANDARD_WEBHOOKS (default 5 minutes).
   */
  tolerance?: Tolerance;
  /** The signing scheme, as the subscription's `signatureScheme` says: "X_SIGNATURE" (default) or "STANDARD_WEBHOOKS". */
  scheme?: SchemeName;
  /** The clock, in epoch milliseconds. */
  now?: () => number;
}

/** An authentic, fresh notification. */
export interface VerifiedNotification<Event extends string = string, EventPayload = Payload> {
  /** `Event` of the body, e.g. `Order.Created`. */
  event: Event;
  /** `Timestamp` of the body: when the service accepted the event (the same on every attempt). */
  timestamp: Date;
  /** `X-JobId` (`webhook-id` with Standard Webhooks): the same on every attempt of one notification. Not covered by X-Signature. */
  jobId: string;
  /** `X-JobAttempt`: 0 for the first delivery, 1..5 for retries. Not signed. */
  attempt: number;
  /** The event's own fields: the body without `Event` and `Timestamp`. */
  payload: EventPayload;
  /** Index in `keys` of the key that verified the signature; during a rotation it tells the old key from the new. */
  keyIndex: number;
}

/**
 * The specification's step 5 and a freshness check: verifies the signature
 * over the raw bytes with each key, then parses the body and checks its
 * `Timestamp` against the tolerance. Throws a WebhookVerificationError
 * subclass (InvalidSignatureError, MissingHeaderError, MalformedHeaderError,
 * MalformedBodyError, StaleTimestampError) carrying the 4xx to answer with.
 */
export function verifyNotification(options: VerifyOptions): VerifiedNotification {
  const { body, headers, keys, scheme = "X_SIGNATURE", now = Date.now } = options;
  assertRawBody(body);
  if (!Array.isArray(keys) || keys.length === 0) throw new TypeError("keys: give at least one key (the subscription's signatureKey)");
  if (options.tolerance !== undefined) assertTolerance(options.tolerance);
  const signed = schemeNamed(scheme).verify(body, headerLookup(headers), keys);
  const { event, timestamp, payload } = parseBody(body);
  // A send time signed per attempt can be held to minutes; the body's Timestamp is the same on every retry.
  const tolerance = options.tolerance ?? (signed.signedSendTime ? SIGNED_SEND_TIME_TOLERANCE_MS : DEFAULT_TOLERANCE_MS);
  if (signed.signedSendTime) assertFresh(signed.signedSendTime, now(), tolerance, "the signed send time");
  else assertFresh(timestamp, now(), tolerance);
  return { event, timestamp, jobId: signed.jobId, attempt: signed.attempt, payload, keyIndex: signed.keyIndex };
}

/**
 * A parsed object or a string here almost always means a JSON body parser ran
 * first; the signature covers the bytes the service sent, which no
 * re-serialisation reproduces. That is the receiver's wiring, not a bad request.
 */
function assertRawBody(body: unknown): asserts body is Uint8Array {
  if (!(body instanceof Uint8Array)) {
    throw new TypeError(
      `body: pass the raw request bytes (a Buffer or Uint8Array), got ${body === null ? "null" : typeof body}; ` +
        "a body a JSON parser already consumed cannot be verified (with Express, mount the receiver before express.json())",
    );
  }
}
