import { NotFoundError, ValidationError } from "./errors.js";
import { isWellFormedId } from "./ids.js";
import type { Subscription } from "./model.js";
import type { SubscriptionStore } from "./ports.js";

/**
 * A relay subscription has no URL of its own: its deliveries go, as relay
 * requests on the live stream, to a `webhooks listen` that forwards them and
 * reports the answer. Its `url` names it, `relay:<id>`, so that every place
 * that takes a subscription's URL (samples, the delivery log) keeps working.
 */
export const RELAY_SCHEME = "relay:";

export function relayUrl(subscriptionId: string): string {
  return `${RELAY_SCHEME}${subscriptionId}`;
}

export function isRelay(subscription: Pick<Subscription, "url">): boolean {
  return subscription.url.startsWith(RELAY_SCHEME);
}

/** What a listener answers for one relay request. */
export interface RelayResult {
  subscriptionId: string;
  jobId: string;
  attempt: number;
  durationMs: number;
  /** Absent when the local receiver did not answer. */
  statusCode?: number;
  responseBody?: string;
  error?: string;
}

/** Answers larger than this are cut: they are kept in the delivery log only up to MAX_RESPONSE_BYTES anyway. */
const MAX_RELAYED_RESPONSE_CHARS = 4096;

/** Takes listeners' answers, for the caller's own relay subscriptions only. */
export class RelayAnswers {
  constructor(
    private readonly deps: {
      subscriptions: SubscriptionStore;
      /** Hands the answer to the attempt waiting for it, here or on another instance; false when none waits. */
      deliver: (result: RelayResult) => boolean;
    },
  ) {}

  async report(clientId: string, result: RelayResult): Promise<boolean> {
    const subscription = isWellFormedId("sub", result.subscriptionId)
      ? await this.deps.subscriptions.get(result.subscriptionId)
      : undefined;
    if (!subscription || subscription.clientId !== clientId || !isRelay(subscription))
      throw new NotFoundError(`relay subscription ${JSON.stringify(result.subscriptionId.slice(0, 64))} not found`);
    const answered = result.statusCode !== undefined && result.statusCode >= 100 && result.statusCode <= 599;
    if (!answered && !result.error)
      throw new ValidationError("give statusCode (100-599) or the error that kept an answer from coming", "statusCode");
    return this.deps.deliver({
      ...result,
      ...(result.responseBody !== undefined ? { responseBody: result.responseBody.slice(0, MAX_RELAYED_RESPONSE_CHARS) } : {}),
      ...(result.error !== undefined ? { error: result.error.slice(0, 500) } : {}),
    });
  }
}
