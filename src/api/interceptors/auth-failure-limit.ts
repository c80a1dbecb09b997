import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ipv6Groups } from "../../domain/ip-address.js";
import { toConnectError } from "../error-mapping.js";
import { edgeFacts } from "../transport/edge-facts.js";

/** How many sources are remembered at most; past it the one remembered longest is forgotten. */
const MAX_TRACKED_SOURCES = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Failed authentications per source address, a token bucket each: a source
 * may fail `perMinute` times in a row, and earns one more try every
 * 60/`perMinute` seconds. A success costs nothing.
 *
 * The modes of one source, and what moves it:
 * - UNTRACKED: no failures remembered (not in the map). A failure → COUNTING.
 * - COUNTING: failures remembered, at least one token left; attempts are
 *   checked. The failure that takes the last token → LOCKED_OUT; time that
 *   refills the bucket → UNTRACKED (forgotten when next looked at).
 * - LOCKED_OUT: under one token. Every auth attempt is refused unchecked,
 *   a valid key's too: an attacker who finally guessed right looks just like
 *   a client. Time that brings one token back → COUNTING.
 * A source is its TCP peer address (never X-Forwarded-For); IPv6 by its /64,
 * which one subscriber line usually owns whole. Other sources are unaffected.
 */
export class AuthFailureLimiter {
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
    private readonly maxSources = MAX_TRACKED_SOURCES,
  ) {}

  /** Seconds until `address` may try to authenticate again; 0 when it may now. */
  retryAfterSeconds(address: string | undefined): number {
    const bucket = this.#refilled(address);
    if (!bucket || bucket.tokens >= 1) return 0;
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / this.perMinute));
  }

  recordFailure(address: string | undefined): void {
    if (address === undefined) return;
    const source = sourceOf(address);
    const bucket = this.#refilled(address) ?? { tokens: this.perMinute, at: this.now() };
    bucket.tokens -= 1;
    this.#buckets.delete(source); // re-inserted last: the map's order is least recently failed first
    if (this.#buckets.size >= this.maxSources) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest !== undefined) this.#buckets.delete(oldest);
    }
    this.#buckets.set(source, bucket);
  }

  /** How many sources are remembered (for tests of the bound). */
  get trackedSources(): number {
    return this.#buckets.size;
  }

  #refilled(address: string | undefined): Bucket | undefined {
    if (address === undefined) return undefined;
    const source = sourceOf(address);
    const bucket = this.#buckets.get(source);
    if (!bucket) return undefined;
    const time = this.now();
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + ((time - bucket.at) / 60_000) * this.perMinute);
    bucket.at = time;
    if (bucket.tokens >= this.perMinute) {
      this.#buckets.delete(source);
      return undefined;
    }
    return bucket;
  }
}

/** The key a peer address is counted under: IPv4 as is (also when mapped into IPv6), IPv6 by its /64. */
export function sourceOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (!address.includes(":")) return address;
  const groups = ipv6Groups(address);
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
}

/**
 * Refuses authentication attempts from a source that is over its failure
 * budget (resource_exhausted, HTTP 429, with Retry-After), and counts the
 * failures of the auth interceptor inside it.
 */
export function createAuthFailureLimitInterceptor(limiter: AuthFailureLimiter): Interceptor {
  return (next) => async (req) => {
    const source = edgeFacts(req.contextValues).sourceAddress;
    const waitSeconds = limiter.retryAfterSeconds(source);
    if (waitSeconds > 0) {
      throw new ConnectError(`too many failed authentications from your address; retry in ${waitSeconds} s`, Code.ResourceExhausted, {
        "retry-after": String(waitSeconds),
      });
    }
    try {
      return await next(req);
    } catch (error) {
      if (toConnectError(error)?.code === Code.Unauthenticated) limiter.recordFailure(source);
      throw error;
    }
  };
}
