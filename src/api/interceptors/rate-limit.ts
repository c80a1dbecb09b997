import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { clientKey } from "./auth.js";

export interface RateLimit {
  /** Sustained calls per second per caller. */
  perSecond: number;
  /** Calls a caller may make at once after being idle. */
  burst: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

const MAX_TRACKED_CALLERS = 100_000;

/**
 * A token bucket per caller (the authenticated client, or "admin"), kept in
 * this process: each instance limits on its own. Over the limit the call
 * fails with resource_exhausted (HTTP 429) and a Retry-After in seconds.
 */
export function createRateLimitInterceptor(limit: RateLimit, now: () => number = Date.now): Interceptor {
  const buckets = new Map<string, Bucket>();
  return (next) => async (req) => {
    const caller = req.contextValues.get(clientKey)?.id ?? "admin";
    const time = now();
    const bucket = buckets.get(caller) ?? { tokens: limit.burst, at: time };
    bucket.tokens = Math.min(limit.burst, bucket.tokens + ((time - bucket.at) / 1000) * limit.perSecond);
    bucket.at = time;
    if (bucket.tokens < 1) {
      const waitSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / limit.perSecond));
      throw new ConnectError(
        `rate limit of ${limit.perSecond} calls per second exceeded; retry in ${waitSeconds} s`,
        Code.ResourceExhausted,
        {
          "retry-after": String(waitSeconds),
        },
      );
    }
    bucket.tokens -= 1;
    if (!buckets.has(caller)) {
      // A full map is cleared rather than grown: forgetting buckets only forgives callers.
      if (buckets.size >= MAX_TRACKED_CALLERS) buckets.clear();
      buckets.set(caller, bucket);
    }
    return next(req);
  };
}
