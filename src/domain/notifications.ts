import type { EventCatalog } from "./event-catalog.js";
import { newId } from "./ids.js";
import type { JsonObject, Notification, Subscription } from "./model.js";
import { buildNotificationBody } from "./notification-body.js";
import type { DeliveryQueue, NotificationStore } from "./ports.js";
import type { Subscriptions } from "./subscriptions.js";

export interface NotificationsDeps {
  store: NotificationStore;
  queue: DeliveryQueue;
  catalog: EventCatalog;
  subscriptions: Subscriptions;
}

/**
 * Accepting notifications. A notification is stored before it is queued, and
 * a sweep re-queues any the scheduler never got, so an accepted notification
 * survives a crash at any point.
 */
export class Notifications {
  constructor(private readonly deps: NotificationsDeps) {}

  /** Creates and queues one notification per subscription; returns their job ids. */
  async enqueue(subscriptions: readonly Subscription[], event: string, payload: JsonObject, at = new Date()): Promise<string[]> {
    const body = buildNotificationBody(event, payload, at);
    const notifications: Notification[] = subscriptions.map((subscription) => ({
      id: newId("ntf"),
      subscriptionId: subscription.id,
      clientId: subscription.clientId,
      event,
      body,
      status: "pending",
      attemptCount: 0,
      createdAt: at,
      updatedAt: at,
    }));
    if (notifications.length === 0) return [];
    await this.deps.store.insert(notifications);
    const ids = notifications.map((n) => n.id);
    await this.deps.queue.enqueue(ids);
    return ids;
  }

  /** Sends the event's sample payload to one of the caller's subscribed URLs. */
  async triggerSample(clientId: string, event: string, url: string): Promise<string> {
    const type = this.deps.catalog.require(event);
    const subscription = await this.deps.subscriptions.forSample(clientId, type.name, url);
    const [jobId] = await this.enqueue([subscription], type.name, type.samplePayload);
    return jobId as string;
  }
}
