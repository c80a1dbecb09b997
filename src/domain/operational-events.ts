import type { DeliveryEvent, DeliveryObserver } from "./delivery-events.js";
import type { EventTypeDefinition } from "./event-catalog.js";
import type { JsonObject, Subscription } from "./model.js";

export const SUBSCRIPTION_DISABLED_EVENT = "Subscription.Disabled";
export const SUBSCRIPTION_FAILING_EVENT = "Subscription.Failing";

/**
 * The service's own events, in every catalog: a client subscribes an
 * endpoint of its choice to them like to any other event, and is told what
 * happened to its other subscriptions.
 */
export const OPERATIONAL_EVENT_TYPES: readonly EventTypeDefinition[] = [
  {
    name: SUBSCRIPTION_DISABLED_EVENT,
    description:
      "The service disabled one of your subscriptions: its receiver answered 410 Gone, or every delivery failed for too long. " +
      "Nothing is delivered to it until you enable it again.",
    samplePayload: {
      SubscriptionId: "sub_0123456789abcdef0123456789abcdef",
      SubscribedEvent: "Order.Created",
      Url: "https://example.com/webhooks",
      Cause: "failing",
      Reason: "disabled automatically: every delivery failed since 2026-01-01T00:00:00.000Z",
      DisabledAt: "2026-01-06T00:00:00.000Z",
    },
    jsonSchema: {
      type: "object",
      required: ["SubscriptionId", "SubscribedEvent", "Url", "Cause", "Reason", "DisabledAt"],
      properties: {
        SubscriptionId: { type: "string" },
        SubscribedEvent: { type: "string", description: "The event the disabled subscription took." },
        Url: { type: "string" },
        Cause: { enum: ["gone", "failing"], description: "gone: the receiver answered 410 Gone; failing: it failed too long." },
        Reason: { type: "string" },
        DisabledAt: { type: "string", description: "ISO 8601, UTC." },
      },
    },
  },
  {
    name: SUBSCRIPTION_FAILING_EVENT,
    description:
      "Every delivery to one of your subscriptions has failed for FAILING_NOTICE_AFTER (1 hour unless the operator set another). " +
      "Told once per failure streak; the subscription is disabled if it goes on failing.",
    samplePayload: {
      SubscriptionId: "sub_0123456789abcdef0123456789abcdef",
      SubscribedEvent: "Order.Created",
      Url: "https://example.com/webhooks",
      FailingSince: "2026-01-01T00:00:00.000Z",
    },
    jsonSchema: {
      type: "object",
      required: ["SubscriptionId", "SubscribedEvent", "Url", "FailingSince"],
      properties: {
        SubscriptionId: { type: "string" },
        SubscribedEvent: { type: "string", description: "The event the failing subscription takes." },
        Url: { type: "string" },
        FailingSince: { type: "string", description: "The first failed attempt since the last success; ISO 8601, UTC." },
      },
    },
  },
];

/** A publish of one of the service's own events, to every subscriber of it but `except` (the subscription it is about). */
export interface OperationalPublish {
  clientId: string;
  event: string;
  payload: JsonObject;
  except: string;
}

/**
 * Turns what happens to subscriptions into the service's own events. A
 * subscription is never told about itself: one that takes these events and
 * is disabled does not notify itself, so nothing loops. Observers must not
 * block the delivery path: the publish runs on its own, a failure logged.
 */
export class OperationalEvents implements DeliveryObserver {
  constructor(
    private readonly publish: (input: OperationalPublish) => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
  ) {}

  observe(event: DeliveryEvent): void {
    if (event.kind === "subscription-disabled") {
      this.#tell(event.subscription, SUBSCRIPTION_DISABLED_EVENT, {
        Cause: event.cause,
        Reason: event.reason,
        DisabledAt: event.at.toISOString(),
      });
    } else if (event.kind === "subscription-failing") {
      this.#tell(event.subscription, SUBSCRIPTION_FAILING_EVENT, { FailingSince: event.failingSince.toISOString() });
    }
  }

  #tell(subscription: Subscription, event: string, fields: JsonObject): void {
    this.publish({
      clientId: subscription.clientId,
      event,
      payload: { SubscriptionId: subscription.id, SubscribedEvent: subscription.event, Url: subscription.url, ...fields },
      except: subscription.id,
    }).catch(this.onError);
  }
}
