import { createHash } from "node:crypto";
import { WebhookVerificationError } from "./errors.js";
import type { Tolerance } from "./freshness.js";
import { assertTolerance } from "./freshness.js";
import type { HeadersInput } from "./headers.js";
import { assertKeys, type KeyInput } from "./keys.js";
import { type SchemeName, schemeNamed } from "./schemes/index.js";
import type { SeenStore } from "./seen-store.js";
import { MemorySeenStore } from "./seen-stores/memory.js";
import { type VerifiedNotification, verifyNotification } from "./verify.js";

export interface ReceiverOptions {
  /**
   * The keys that may sign: `[signatureKey]`, during a rotation
   * `[signatureKey, nextSignatureKey]`. A function is asked on every request,
   * so keys can change without a restart.
   */
  keys: readonly KeyInput[] | (() => readonly KeyInput[]);
  /** Called once per job with the verified notification; throw (or reject) to have the service retry it. */
  onNotification: (notification: VerifiedNotification) => unknown;
  /** Where processed jobs are remembered. Default: a MemorySeenStore of this process. */
  seen?: SeenStore;
  /**
   * Maximum age in milliseconds, or false. Of the body's `Timestamp` with
   * X_SIGNATURE (default 30 hours, for every attempt); of the attempt's signed
   * `webhook-timestamp` with STANDARD_WEBHOOKS (default 5 minutes).
   */
  tolerance?: Tolerance;
  /**
   * What makes two deliveries the same job. "jobId" (default) follows the
   * specification: `X-JobId`, so an explicit redelivery (a new job id) is
   * processed again. "body" keys on the body's SHA-256: a replayed body with a
   * forged `X-JobId` is a duplicate too, and so is a redelivery.
   */
  deduplicateBy?: "jobId" | "body";
  /** How long a claim holds a job while the handler runs; it lapses after, so a crashed handler's job can run again. Default 5 minutes. */
  leaseMs?: number;
  /** How the subscription signs: "X_SIGNATURE" (default) or "STANDARD_WEBHOOKS", as its `signatureScheme` says. */
  scheme?: SchemeName;
  /** Told about every refused request and failed handler; the receiver itself logs nothing. */
  onError?: (error: unknown, context: ErrorContext) => void;
  /** The clock, in epoch milliseconds. */
  now?: () => number;
}

export interface ErrorContext {
  /** What went wrong: the request was refused, the handler failed, or the seen-store did. */
  stage: "verify" | "handler" | "seen-store";
  jobId?: string;
  attempt?: number;
}

/** What to answer the service: status, headers and a short JSON body. */
export interface ReceiverResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawRequest {
  /** The raw body bytes as they arrived. */
  body: Uint8Array;
  headers: HeadersInput;
}

/** Verifies, de-duplicates and dispatches one request; never throws. The adapters write its answer. */
export interface Receiver {
  handle(request: RawRequest): Promise<ReceiverResponse>;
}

export const DEFAULT_LEASE_MS = 5 * 60_000;

/**
 * A duplicate that arrives while the first copy's handler still runs is
 * refused with 409, not held open: the service's retry then finds the job
 * processed (2xx) or, if the handler failed, processes it. Thirty seconds
 * is sooner than the default schedule's next step and long enough for most
 * handlers to finish.
 */
export const IN_PROGRESS_RETRY_AFTER_SECONDS = 30;

/**
 * The specification's steps 5–7 in one place: verify the signature and the
 * Timestamp, skip a job already processed, process it once, and answer.
 *
 * | outcome                         | status | handler |
 * |---------------------------------|--------|---------|
 * | verified, first time            | 200    | called  |
 * | verified, processed before      | 200    | not called |
 * | verified, being processed now   | 409 + Retry-After | not called |
 * | refused (signature, headers, …) | 4xx of the error | not called |
 * | handler threw                   | 500, job left unseen | called |
 * | seen-store failed to claim      | 503    | not called |
 */
export function createReceiver(options: ReceiverOptions): Receiver {
  const { onNotification, tolerance, scheme, onError, now } = options;
  const seen = options.seen ?? new MemorySeenStore(now ? { now } : {});
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const deduplicateBy = options.deduplicateBy ?? "jobId";
  const keysOf = typeof options.keys === "function" ? options.keys : () => options.keys as readonly KeyInput[];
  if (typeof options.keys !== "function") {
    assertKeys(options.keys);
    schemeNamed(scheme ?? "X_SIGNATURE").checkKeys(options.keys);
  }
  if (typeof onNotification !== "function") throw new TypeError("onNotification: expected a function");
  if (tolerance !== undefined) assertTolerance(tolerance);
  if (!(leaseMs > 0)) throw new TypeError("leaseMs must be above 0");
  if (deduplicateBy !== "jobId" && deduplicateBy !== "body") throw new TypeError('deduplicateBy: "jobId" or "body"');
  const report = (error: unknown, context: ErrorContext) => {
    try {
      onError?.(error, context);
    } catch {}
  };

  return {
    async handle({ body, headers }) {
      let notification: VerifiedNotification;
      try {
        notification = verifyNotification({
          body,
          headers,
          keys: keysOf(),
          ...(tolerance === undefined ? {} : { tolerance }),
          ...(scheme ? { scheme } : {}),
          ...(now ? { now } : {}),
        });
      } catch (error) {
        report(error, { stage: "verify" });
        if (error instanceof WebhookVerificationError) return answer(error.status, { error: error.code, message: error.message });
        return answer(500, { error: "receiver_misconfigured" });
      }
      const context = { jobId: notification.jobId, attempt: notification.attempt };
      const key = deduplicateBy === "body" ? `sha256:${createHash("sha256").update(body).digest("hex")}` : notification.jobId;

      let claim: Awaited<ReturnType<SeenStore["claim"]>>;
      try {
        claim = await seen.claim(key, leaseMs);
      } catch (error) {
        report(error, { stage: "seen-store", ...context });
        return answer(503, { error: "seen_store_unavailable" });
      }
      if (claim.state === "done") return answer(200, { status: "duplicate", jobId: notification.jobId });
      if (claim.state === "in_progress") {
        return answer(
          409,
          { status: "in_progress", jobId: notification.jobId },
          { "retry-after": String(IN_PROGRESS_RETRY_AFTER_SECONDS) },
        );
      }

      try {
        await onNotification(notification);
      } catch (error) {
        report(error, { stage: "handler", ...context });
        try {
          await seen.release(key, claim.token);
        } catch (releaseError) {
          // The claim lapses after leaseMs instead.
          report(releaseError, { stage: "seen-store", ...context });
        }
        return answer(500, { error: "handler_failed", jobId: notification.jobId });
      }
      try {
        await seen.commit(key, claim.token);
      } catch (error) {
        // Processed but not remembered. A 200 still: a non-2xx would make the
        // service retry, and that retry would run the handler a second time
        // once the claim lapses; only a replay can now get through.
        report(error, { stage: "seen-store", ...context });
      }
      return answer(200, { status: "processed", jobId: notification.jobId });
    },
  };
}

function answer(status: number, body: Record<string, string>, headers: Record<string, string> = {}): ReceiverResponse {
  return { status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) };
}
