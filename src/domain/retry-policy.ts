import { ValidationError } from "./errors.js";

/** The specification allows at most five retries after the first attempt. */
export const MAX_RETRIES = 5;

export interface RetryPolicy {
  /** Delay before retry n (1-based) is `delaysMs[n - 1]`; its length is the retry count. */
  delaysMs: readonly number[];
  /** Each delay is spread by ±jitter (0.2 = ±20%) so retries of many jobs don't align. */
  jitter: number;
  /** Upper bound for a receiver's `Retry-After`. */
  maxRetryAfterMs: number;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `250ms`, `10s`, `5m`, `2h`, `1d` → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match?.[1] || !match[2]) throw new ValidationError(`not a duration: ${JSON.stringify(text)} (use e.g. 500ms, 10s, 5m, 2h, 1d)`);
  return Math.round(Number(match[1]) * (UNIT_MS[match[2]] ?? 0));
}

/** `10s,1m,5m,30m,2h` → a delay per retry (1 to 5 of them). */
export function parseRetrySchedule(text: string): number[] {
  const delays = text.split(",").map(parseDuration);
  if (delays.length < 1 || delays.length > MAX_RETRIES) {
    throw new ValidationError(`a retry schedule has 1 to ${MAX_RETRIES} delays, got ${delays.length}`);
  }
  return delays;
}

/** Five retries over about a day, as receivers expect from webhook senders. */
export const DEFAULT_RETRY_SCHEDULE = "1m,10m,1h,6h,16h";

/**
 * Milliseconds to wait before retry `retry` (1-based), or null when the
 * retries are used up. A receiver's Retry-After wins over the schedule.
 */
export function retryDelay(policy: RetryPolicy, retry: number, retryAfterMs?: number, random: () => number = Math.random): number | null {
  const scheduled = policy.delaysMs[retry - 1];
  if (scheduled === undefined) return null;
  if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), policy.maxRetryAfterMs);
  const spread = 1 + policy.jitter * (2 * random() - 1);
  return Math.max(0, Math.round(scheduled * spread));
}
