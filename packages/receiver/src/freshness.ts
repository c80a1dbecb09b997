import { StaleTimestampError } from "./errors.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * How old a notification's `Timestamp` may be: 30 hours, for every attempt.
 *
 * `Timestamp` is when the service accepted the event, and every retry resends
 * it unchanged. With the default schedule (1m, 10m, 1h, 6h, 16h, each ±20 %)
 * the fifth retry leaves at most 23h11m × 1.2 ≈ 27h50m after it; 30 hours
 * leaves two hours for queueing. Attempts do not get windows of their own:
 * `X-JobAttempt` is not signed, so an attacker replaying a captured body would
 * simply claim the attempt with the widest window (see the README).
 */
export const DEFAULT_TOLERANCE_MS = 30 * HOUR;

/**
 * How old a send time signed for each attempt (Standard Webhooks'
 * `webhook-timestamp`) may be: 5 minutes, as the Standard Webhooks libraries
 * allow. Every retry is signed anew, so it holds for retries too.
 */
export const SIGNED_SEND_TIME_TOLERANCE_MS = 5 * MINUTE;

/** How far in the future a `Timestamp` may lie: the service's and the receiver's clocks drift apart. */
export const MAX_CLOCK_SKEW_MS = 5 * MINUTE;

/** Milliseconds, or false to accept any age (e.g. while `recover` redelivers old notifications). */
export type Tolerance = number | false;

export function assertTolerance(tolerance: Tolerance): void {
  if (tolerance !== false && !(typeof tolerance === "number" && tolerance > 0)) {
    throw new TypeError(`tolerance: milliseconds above 0, or false to accept any age; got ${String(tolerance)}`);
  }
}

/** Throws a StaleTimestampError unless `timestamp` (named `what` in the message) lies within the tolerance of `now`. */
export function assertFresh(timestamp: Date, now: number, tolerance: Tolerance, what = "the Timestamp"): void {
  const ageMs = now - timestamp.getTime();
  if (ageMs < -MAX_CLOCK_SKEW_MS) {
    throw new StaleTimestampError(
      timestamp,
      ageMs,
      `${what} ${timestamp.toISOString()} lies ${Math.round(-ageMs / 1000)} s in the future (more than the ${MAX_CLOCK_SKEW_MS / MINUTE} min clocks may drift)`,
    );
  }
  if (tolerance !== false && ageMs > tolerance) {
    throw new StaleTimestampError(
      timestamp,
      ageMs,
      `${what} ${timestamp.toISOString()} is ${Math.round(ageMs / 1000)} s old, older than the tolerance of ${Math.round(tolerance / 1000)} s`,
    );
  }
}
