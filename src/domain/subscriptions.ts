import { ValidationError } from "./errors.js";
import type { EventCatalog } from "./event-catalog.js";
import { newId } from "./ids.js";
import type { Subscription } from "./model.js";
import type { SubscriptionStore } from "./ports.js";
import { generateSigningKeyPair } from "./signature.js";
import { normaliseTargetUrl, type TargetPolicy } from "./target-url.js";

export interface CreateSubscriptionInput {
  event: string;
  url: string;
  description: string;
}

export interface SubscriptionsDeps {
  store: SubscriptionStore;
  catalog: EventCatalog;
  targetPolicy: TargetPolicy;
  signingKeyBits: number;
}

export const MAX_DESCRIPTION_LENGTH = 1000;

/** Creating and finding a client's subscriptions. */
export class Subscriptions {
  constructor(private readonly deps: SubscriptionsDeps) {}

  async create(clientId: string, input: CreateSubscriptionInput): Promise<Subscription> {
    const event = this.deps.catalog.require(input.event).name;
    const url = normaliseTargetUrl(input.url, this.deps.targetPolicy);
    if (input.description.length > MAX_DESCRIPTION_LENGTH) {
      throw new ValidationError(`description is longer than ${MAX_DESCRIPTION_LENGTH} characters`, "description");
    }
    const keys = await generateSigningKeyPair(this.deps.signingKeyBits);
    const now = new Date();
    const subscription: Subscription = {
      id: newId("sub"),
      clientId,
      event,
      url,
      description: input.description,
      enabled: true,
      ...keys,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.store.insert(subscription);
    return subscription;
  }

  /**
   * The subscription a sample for `url` is signed with: the caller's own
   * subscription to that URL, preferring one to the same event.
   */
  async forSample(clientId: string, event: string, url: string): Promise<Subscription> {
    const normalised = normaliseTargetUrl(url, { allowPrivateTargets: true, allowHttpTargets: true });
    const candidates = (await this.deps.store.findByUrl(clientId, normalised)).filter((s) => s.enabled);
    const chosen = candidates.find((s) => s.event === event) ?? candidates[0];
    if (!chosen) {
      throw new ValidationError(
        "url is not the URL of one of your enabled subscriptions; create a subscription for it first (its key signs the sample)",
        "url",
      );
    }
    return chosen;
  }
}
