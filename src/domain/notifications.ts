import type { ClientAccess } from "./client-access.js";
import type { DeliveryObserver } from "./delivery-events.js";
import { DomainError, FailedPreconditionError, NotFoundError, ValidationError } from "./errors.js";
import { assertEventName, type EventCatalog } from "./event-catalog.js";
import { isWellFormedId, newId } from "./ids.js";
import type { DeliveryAttempt, JsonObject, Notification, Subscription } from "./model.js";
import { buildNotificationBody } from "./notification-body.js";
import { decodePageToken, type Page, pageSize, paginate } from "./pagination.js";
import { matchesFilter } from "./payload-filter.js";
import { assertPayloadMatches } from "./payload-schema.js";
import type {
  AcceptedPublish,
  ClientStore,
  DeliveryQueue,
  NotificationQuery,
  NotificationStore,
  PublishedBatchItem,
  SubscriptionStore,
} from "./ports.js";
import type { Subscriptions } from "./subscriptions.js";

/** What a subscription's delivery log can be narrowed to (NotificationQuery's conditions). */
export type NotificationFilter = Pick<NotificationQuery, "status" | "event" | "since" | "until">;

import { assertPrintable } from "./text.js";

export interface NotificationsDeps {
  store: NotificationStore;
  subscriptionStore: SubscriptionStore;
  /** Asked whether the client exists when a publish finds no subscription of it. */
  clients: ClientStore;
  /** Which clients are disabled or deleted: publishes for them are refused. */
  access: Pick<ClientAccess, "barred">;
  queue: DeliveryQueue;
  catalog: EventCatalog;
  subscriptions: Subscriptions;
  /** Largest notification body a publish may produce. */
  maxPayloadBytes: number;
  /** Told of every notification accepted. */
  observer: DeliveryObserver;
}

export interface PublishInput {
  clientId: string;
  event: string;
  payload: JsonObject;
  idempotencyKey?: string;
  /** A subscription left out (the service's own events are never sent to the subscription they are about). */
  except?: string;
}

/** As Stripe's: a key is up to 255 printable characters. */
const MAX_IDEMPOTENCY_KEY = 255;
const MAX_RECOVER = 10_000;
/** Events one PublishEvents call may carry: a batch stays one quick transaction. */
export const MAX_BATCH = 500;

/** A publish validated, with its notifications made and not yet accepted. */
interface Prepared {
  item: PublishedBatchItem;
  subscriptions: Subscription[];
  event: string;
}

/** `read`, called once per distinct arguments; later calls share the first's promise. */
function once<A extends string[], T>(read: (...args: A) => Promise<T>): (...args: A) => Promise<T> {
  const made = new Map<string, Promise<T>>();
  return (...args) => {
    const key = JSON.stringify(args);
    const found = made.get(key);
    if (found) return found;
    const reading = read(...args);
    made.set(key, reading);
    return reading;
  };
}

interface Lookups {
  subscribed(clientId: string, event: string): Promise<Subscription[]>;
  requireClient(clientId: string): Promise<void>;
}

function assertIdempotencyKey(key: string): void {
  // Characters, as the message says: an emoji is one, though two UTF-16 units (key.length).
  if (key.length > MAX_IDEMPOTENCY_KEY && (key.length > 2 * MAX_IDEMPOTENCY_KEY || [...key].length > MAX_IDEMPOTENCY_KEY))
    throw new ValidationError(`idempotencyKey is longer than ${MAX_IDEMPOTENCY_KEY} characters`, "idempotencyKey");
  assertPrintable(key, "idempotencyKey");
}

/**
 * Accepting, listing and redelivering notifications. Accepting stores and
 * queues in one write (DeliveryQueue), so an accepted notification survives
 * a crash at any point.
 */
export class Notifications {
  constructor(private readonly deps: NotificationsDeps) {}

  /** Fans an event out to the client's enabled subscriptions to it. */
  async publish(input: PublishInput): Promise<AcceptedPublish> {
    const { item, subscriptions, event } = await this.#prepare(input, this.#lookups());
    if (item.key === undefined) {
      await this.#accept(item.notifications, subscriptions);
      this.#published(event, item.notifications.length);
      return { ids: item.notifications.map((n) => n.id), duplicate: false };
    }
    const [answer] = await this.#acceptBatch([{ item, subscriptions, event }]);
    return answer as AcceptedPublish;
  }

  /**
   * Publishes each event as `publish` would, in one write: all of them are
   * accepted or, when one is refused, none (its error names its index).
   */
  async publishMany(inputs: readonly PublishInput[]): Promise<AcceptedPublish[]> {
    if (inputs.length === 0) throw new ValidationError(`events is empty: send 1 to ${MAX_BATCH} events`, "events");
    if (inputs.length > MAX_BATCH)
      throw new ValidationError(`events has ${inputs.length} events; at most ${MAX_BATCH} go in one call: split it`, "events");
    const lookups = this.#lookups();
    const keys = new Map<string, number>();
    const prepared: Prepared[] = [];
    for (const [index, input] of inputs.entries()) {
      try {
        prepared.push(await this.#prepare(input, lookups));
      } catch (error) {
        if (error instanceof DomainError) error.message = `events[${index}]: ${error.message}`;
        throw error;
      }
      if (input.idempotencyKey === undefined || input.idempotencyKey === "") continue;
      const pair = JSON.stringify([input.clientId, input.idempotencyKey]);
      const first = keys.get(pair);
      if (first !== undefined)
        throw new ValidationError(`events[${index}] repeats the client and idempotencyKey of events[${first}]`, "idempotencyKey");
      keys.set(pair, index);
    }
    return this.#acceptBatch(prepared);
  }

  async #acceptBatch(prepared: readonly Prepared[]): Promise<AcceptedPublish[]> {
    const subscriptions = [...new Map(prepared.flatMap((p) => p.subscriptions).map((s) => [s.id, s])).values()];
    const answers = await this.deps.queue.acceptBatch(
      prepared.map((p) => p.item),
      subscriptions,
    );
    for (const [index, answer] of answers.entries()) {
      const { item, event } = prepared[index] as Prepared;
      if (answer.duplicate) continue;
      this.#accepted(item.notifications);
      this.#published(event, item.notifications.length);
    }
    return answers;
  }

  /** Validates a publish and makes its notifications; `lookups` share reads between the events of one call. */
  async #prepare(input: PublishInput, lookups: Lookups): Promise<Prepared> {
    this.#refuseBarred(input.clientId);
    const type = await this.deps.catalog.require(input.event);
    const at = new Date();
    const body = this.#body(type.name, input.payload, at);
    if (type.jsonSchema) assertPayloadMatches(type.name, type.jsonSchema, input.payload);
    const key = input.idempotencyKey ?? "";
    assertIdempotencyKey(key);
    const found = await lookups.subscribed(input.clientId, type.name);
    const subscribed = input.except === undefined ? found : found.filter((subscription) => subscription.id !== input.except);
    // A client with a subscription exists: only a publish reaching nobody asks.
    if (subscribed.length === 0) await lookups.requireClient(input.clientId);
    // A subscription whose filter the payload misses gets no notification at all, so nothing in its delivery log.
    const subscriptions = subscribed.filter((s) => !s.filter || matchesFilter(s.filter, input.payload));
    const notifications = this.#fanOut(subscriptions, type.name, body, at);
    const item = { clientId: input.clientId, notifications, ...(key === "" ? {} : { key }) };
    return { item, subscriptions, event: type.name };
  }

  /** Reads a call's events share: each client's subscriptions to each event, and whether a client exists, read once. */
  #lookups(): Lookups {
    return {
      subscribed: once((clientId: string, event: string) => this.deps.subscriptionStore.listEnabledForEvent(clientId, event)),
      requireClient: once((clientId: string) => this.#requireClient(clientId)),
    };
  }

  /** Sends the event's sample payload to one of the caller's subscribed URLs. */
  async triggerSample(clientId: string, event: string, url: string): Promise<string> {
    const type = await this.deps.catalog.require(event);
    const subscription = await this.deps.subscriptions.forSample(clientId, type.name, url);
    const at = new Date();
    const [notification] = this.#fanOut([subscription], type.name, this.#body(type.name, type.samplePayload, at), at);
    await this.#accept([notification as Notification], [subscription]);
    return (notification as Notification).id;
  }

  async list(
    clientId: string,
    subscriptionId: string,
    filter: NotificationFilter & { pageSize: number; pageToken: string },
  ): Promise<Page<Notification>> {
    const { status, event, since, until } = filter;
    if (event) assertEventName(event);
    if (since && until && until.getTime() <= since.getTime())
      throw new ValidationError(`until (${until.toISOString()}) must be later than since (${since.toISOString()})`, "until");
    await this.deps.subscriptions.get(clientId, subscriptionId);
    const before = decodePageToken(filter.pageToken);
    return paginate(pageSize(filter.pageSize), (limit) =>
      this.deps.store.list({
        subscriptionId,
        limit,
        ...(status ? { status } : {}),
        ...(event ? { event } : {}),
        ...(since ? { since } : {}),
        ...(until ? { until } : {}),
        ...(before ? { before } : {}),
      }),
    );
  }

  async get(clientId: string, subscriptionId: string, id: string): Promise<{ notification: Notification; attempts: DeliveryAttempt[] }> {
    return (await this.#withSubscription(clientId, subscriptionId, id)).found;
  }

  /** The notification, its attempts and its subscription (the caller's, or not found). */
  async #withSubscription(
    clientId: string,
    subscriptionId: string,
    id: string,
  ): Promise<{ found: { notification: Notification; attempts: DeliveryAttempt[] }; subscription: Subscription }> {
    const subscription = await this.deps.subscriptions.get(clientId, subscriptionId);
    const notification = isWellFormedId("ntf", id) ? await this.deps.store.get(id) : undefined;
    if (!notification || notification.subscriptionId !== subscriptionId)
      throw new NotFoundError(`notification ${JSON.stringify(id.slice(0, 64))} not found`);
    return { found: { notification, attempts: await this.deps.store.listAttempts(id) }, subscription };
  }

  /**
   * What became of one job, for the service that published it: the
   * notification with its attempts, and whether its subscription still
   * exists (its notifications outlive it, see SubscriptionStore.delete).
   */
  async getJob(id: string): Promise<{ notification: Notification; attempts: DeliveryAttempt[]; subscriptionDeleted: boolean }> {
    const notification = isWellFormedId("ntf", id) ? await this.deps.store.get(id) : undefined;
    if (!notification) throw new NotFoundError(`job ${JSON.stringify(id.slice(0, 64))} not found`);
    const [attempts, subscription] = await Promise.all([
      this.deps.store.listAttempts(id),
      this.deps.subscriptionStore.get(notification.subscriptionId),
    ]);
    return { notification, attempts, subscriptionDeleted: subscription === undefined };
  }

  /** A new job (new X-JobId, attempts from 0) with the identical body. */
  async redeliver(clientId: string, subscriptionId: string, id: string): Promise<string> {
    const { found, subscription } = await this.#withSubscription(clientId, subscriptionId, id);
    const [copy] = this.#copies([found.notification]);
    await this.#accept([copy as Notification], [subscription]);
    return (copy as Notification).id;
  }

  /** Redelivers every failed notification of the subscription created since `since`. */
  async recover(clientId: string, subscriptionId: string, since: Date): Promise<string[]> {
    const subscription = await this.deps.subscriptions.get(clientId, subscriptionId);
    const failed = await this.deps.store.listFailedSince(subscriptionId, since, MAX_RECOVER);
    const copies = this.#copies(failed);
    await this.#accept(copies, [subscription]);
    return copies.map((n) => n.id);
  }

  #refuseBarred(clientId: string): void {
    const barred = this.deps.access.barred(clientId);
    if (barred?.deleted) throw new NotFoundError(`client ${clientId} not found; it was deleted`);
    if (barred)
      throw new FailedPreconditionError(
        `client ${clientId} is disabled (${barred.reason}): publishes for it are refused until an operator enables it`,
      );
  }

  async #requireClient(clientId: string): Promise<void> {
    if (isWellFormedId("cli", clientId) && (await this.deps.clients.get(clientId))) return;
    throw new NotFoundError(`client ${JSON.stringify(clientId.slice(0, 64))} not found; GET /api/internal/clients lists the clients`);
  }

  /** The body every attempt sends; refuses base fields, prototype keys and oversized payloads. */
  #body(event: string, payload: JsonObject, at: Date): string {
    const body = buildNotificationBody(event, payload, at);
    if (Buffer.byteLength(body) > this.deps.maxPayloadBytes) {
      throw new ValidationError(`the notification would be larger than ${this.deps.maxPayloadBytes} bytes`, "payload");
    }
    return body;
  }

  #fanOut(subscriptions: readonly Subscription[], event: string, body: string, at: Date): Notification[] {
    return subscriptions.map((subscription) => ({
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
  }

  #copies(originals: readonly Notification[]): Notification[] {
    const at = new Date();
    return originals.map((original) => ({
      ...original,
      id: newId("ntf"),
      status: "pending",
      attemptCount: 0,
      redeliveryOf: original.redeliveryOf ?? original.id,
      createdAt: at,
      updatedAt: at,
    }));
  }

  async #accept(notifications: readonly Notification[], subscriptions: readonly Subscription[]): Promise<void> {
    await this.deps.queue.accept(notifications, subscriptions);
    this.#accepted(notifications);
  }

  #published(event: string, fanout: number): void {
    this.deps.observer.observe({ kind: "published", at: new Date(), event, fanout });
  }

  #accepted(notifications: readonly Notification[]): void {
    if (notifications.length > 0) this.deps.observer.observe({ kind: "accepted", at: new Date(), notifications });
  }
}
