import { assertFresh, assertTolerance, DEFAULT_TOLERANCE_MS, type Tolerance } from "./freshness.js";
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
  /** Maximum age of the body's `Timestamp` in milliseconds, or false for any age. Default: 30 hours, for every attempt. */
  tolerance?: Tolerance;
  /** The signing scheme; the service's `X_SIGNATURE` is the default and, for now, the only one. */
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
  /** `X-JobId`: the same on every attempt of one notification. Not covered by X-Signature. */
  jobId: string;
  /** `X-JobAttempt`: 0 for the first delivery, 1..5 for retries. Not covered by X-Signature. */
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
  const { body, headers, keys, tolerance = DEFAULT_TOLERANCE_MS, scheme = "X_SIGNATURE", now = Date.now } = options;
  assertRawBody(body);
  if (!Array.isArray(keys) || keys.length === 0) throw new TypeError("keys: give at least one key (the subscription's signatureKey)");
  assertTolerance(tolerance);
  const signed = schemeNamed(scheme).verify(body, headerLookup(headers), keys);
  const { event, timestamp, payload } = parseBody(body);
  assertFresh(signed.signedSendTime ?? timestamp, now(), tolerance);
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
