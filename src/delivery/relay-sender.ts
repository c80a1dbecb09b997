import type { DeliveryActivity } from "../domain/delivery-activity.js";
import type { Notification } from "../domain/model.js";
import type { RelayResult } from "../domain/relay.js";
import type { SendResult } from "./http-sender.js";

export interface RelayRequest {
  notification: Notification;
  attempt: number;
  /** `X-Signature`, `X-JobId`, `X-JobAttempt` and the custom headers: what the HTTP delivery would carry. */
  headers: Record<string, string>;
  /** Aborted when the service shuts down. */
  signal: AbortSignal;
}

/**
 * Attempts of relay subscriptions (see domain/relay.ts): instead of an HTTP
 * request, a relay request on the live feed, and a wait for the listener's
 * answer, at most `timeoutMs` like an HTTP attempt. The answer may arrive
 * here (`settle`, from ReportRelayResult on this instance or on another one).
 *
 * Each attempt waits in one of three ways, then leaves:
 * - ANSWERED (`settle`): its status code, body or error, as an HTTP attempt's.
 * - TIMED OUT: nobody answered ("no listener answered…"); a retry follows.
 * - INTERRUPTED (shutdown): the attempt does not count and runs again later.
 */
export class RelaySender {
  readonly #waiting = new Map<string, (result: SendResult) => void>();

  constructor(
    private readonly options: {
      timeoutMs: number;
      maxResponseBytes: number;
      /** Hands the relay request to the live feed. */
      announce: (activity: DeliveryActivity) => void;
    },
  ) {}

  send(request: RelayRequest): Promise<SendResult> {
    const { notification, attempt } = request;
    const key = keyOf(notification.id, attempt);
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise<SendResult>((resolve) => {
      const finish = (result: SendResult) => {
        clearTimeout(timer);
        request.signal.removeEventListener("abort", onShutdown);
        this.#waiting.delete(key);
        resolve(result);
      };
      const timer = setTimeout(
        () => finish({ durationMs: elapsed(), error: `no listener answered within ${this.options.timeoutMs} ms`, interrupted: false }),
        this.options.timeoutMs,
      );
      const onShutdown = () => finish({ durationMs: elapsed(), error: "interrupted by shutdown", interrupted: true });
      if (request.signal.aborted) return onShutdown();
      request.signal.addEventListener("abort", onShutdown, { once: true });
      this.#waiting.set(key, finish);
      this.options.announce({
        kind: "relay-request",
        at: new Date(),
        clientId: notification.clientId,
        subscriptionId: notification.subscriptionId,
        event: notification.event,
        jobId: notification.id,
        attempt,
        status: "pending",
        headers: { "Content-Type": "application/json", ...request.headers },
        body: notification.body,
      });
    });
  }

  /** Records a listener's answer if its attempt waits here; false otherwise. */
  settle(result: RelayResult): boolean {
    const finish = this.#waiting.get(keyOf(result.jobId, result.attempt));
    if (!finish) return false;
    finish({
      durationMs: result.durationMs,
      ...(result.statusCode !== undefined ? { statusCode: result.statusCode } : {}),
      ...(result.statusCode !== undefined ? { responseBody: (result.responseBody ?? "").slice(0, this.options.maxResponseBytes) } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
      interrupted: false,
    });
    return true;
  }

  get waiting(): number {
    return this.#waiting.size;
  }
}

function keyOf(jobId: string, attempt: number): string {
  return `${jobId}/${attempt}`;
}
