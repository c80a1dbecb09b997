/**
 * Why a request is not an authentic, fresh notification. Every refusal is a
 * subclass, so one `instanceof WebhookVerificationError` catches them all;
 * `status` is the 4xx to answer with and `code` a stable machine-readable name.
 *
 * Any non-2xx answer makes the service retry (only 410 would disable the
 * subscription, and no refusal uses it), so a refusal caused by the receiver's
 * own configuration — a key not deployed yet — heals on a later attempt.
 */
export abstract class WebhookVerificationError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
}

/** No key given verifies `X-Signature` over the raw body: tampered, wrong key, or not from the service. */
export class InvalidSignatureError extends WebhookVerificationError {
  readonly status = 401;
  readonly code = "invalid_signature";
  override name = "InvalidSignatureError";
}

/** A header the scheme needs (`X-Signature`, `X-JobId`, `X-JobAttempt`) is absent or empty. */
export class MissingHeaderError extends WebhookVerificationError {
  readonly status = 400;
  readonly code = "missing_header";
  override name = "MissingHeaderError";

  constructor(readonly header: string) {
    super(`the ${header} header is missing`);
  }
}

/** A header is present but not of its form: an attempt that is not a small integer, a repeated header. */
export class MalformedHeaderError extends WebhookVerificationError {
  readonly status = 400;
  readonly code = "malformed_header";
  override name = "MalformedHeaderError";

  constructor(
    readonly header: string,
    reason: string,
  ) {
    super(`the ${header} header ${reason}`);
  }
}

/** The signed body is not a notification: not JSON, not an object, or without a valid `Event` / `Timestamp`. */
export class MalformedBodyError extends WebhookVerificationError {
  readonly status = 400;
  readonly code = "malformed_body";
  override name = "MalformedBodyError";
}

/** The body's `Timestamp` is older than the tolerance, or further in the future than clocks drift. */
export class StaleTimestampError extends WebhookVerificationError {
  readonly status = 400;
  readonly code = "stale_timestamp";
  override name = "StaleTimestampError";

  constructor(
    readonly timestamp: Date,
    readonly ageMs: number,
    message: string,
  ) {
    super(message);
  }
}

/** The body is larger than the adapter accepts; refused before it is read to the end. */
export class BodyTooLargeError extends WebhookVerificationError {
  readonly status = 413;
  readonly code = "body_too_large";
  override name = "BodyTooLargeError";

  constructor(readonly limitBytes: number) {
    super(`the body is larger than ${limitBytes} bytes`);
  }
}
