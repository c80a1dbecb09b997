import {
  type ActivityFilter,
  activitiesFromLog,
  activityKey,
  type DeliveryActivity,
  matchesFilter,
  type Outcome,
} from "./delivery-activity.js";
import { NotFoundError, ValidationError } from "./errors.js";
import type { Notification, Subscription } from "./model.js";
import type { ClientStore, NotificationStore, SubscriptionStore } from "./ports.js";
import { isRelay } from "./relay.js";
import type { HeldLeases, RelayLeases } from "./relay-leases.js";

/** A watcher as the live feed hands it out (src/live/activity-watcher.ts). */
export interface LiveWatcher {
  /** The next live activity; undefined once closed; rejects once the watcher fell too far behind. */
  next(): Promise<DeliveryActivity | undefined>;
  /** Resolves when `next` would answer at once. */
  waitForActivity(): Promise<void>;
  close(): void;
}

export interface LiveFeed {
  attach(filter: ActivityFilter): LiveWatcher;
  /** Resolves once every instance sends this one its activity (after the first watcher attached). */
  announced(): Promise<void>;
}

export interface WatchRequest {
  /** The caller's client; unset for an admin watching every client. */
  clientId?: string;
  subscriptionId?: string;
  event?: string;
  outcome?: Outcome;
  since?: Date;
  /** Relay subscriptions of the caller whose relay requests this watch forwards. */
  relaySubscriptionIds?: readonly string[];
}

/** More notifications than this to replay: the caller must choose a later `since` or a narrower filter. */
const MAX_REPLAY_NOTIFICATIONS = 1_000;
const PAGE = 100;

/**
 * One watch: what the delivery log holds since `since` (the replay), then
 * the live feed, without repeating what the replay already gave. The live
 * watcher is attached before the log is read, so that nothing falls between.
 */
export class Watch {
  readonly #seen: Set<string>;

  constructor(
    readonly replay: readonly DeliveryActivity[],
    private readonly live: LiveWatcher,
    /** The body of a notification, for a relay request that came from another instance without it. */
    private readonly bodyOf: (jobId: string) => Promise<string | undefined>,
    /** The leases of the temporary relay subscriptions it forwards for, held while it is open. */
    private readonly leases: HeldLeases,
  ) {
    this.#seen = new Set(replay.map(activityKey));
  }

  async next(): Promise<DeliveryActivity | undefined> {
    for (;;) {
      const activity = await this.live.next();
      if (activity?.kind === "relay-request" && activity.body === undefined)
        return { ...activity, body: (await this.bodyOf(activity.jobId)) ?? "" };
      if (!activity || this.#seen.size === 0 || !this.#seen.delete(activityKey(activity))) return activity;
    }
  }

  waitForActivity(): Promise<void> {
    return this.live.waitForActivity();
  }

  close(): void {
    this.live.close();
    this.leases.release();
  }
}

/** Opens watches, within the caller's own subscriptions. */
export class DeliveryWatches {
  constructor(
    private readonly deps: {
      feed: LiveFeed;
      clients: ClientStore;
      subscriptions: SubscriptionStore;
      notifications: NotificationStore;
      leases: Pick<RelayLeases, "hold">;
    },
  ) {}

  async open(request: WatchRequest): Promise<Watch> {
    if (request.subscriptionId) {
      const subscription = await this.deps.subscriptions.get(request.subscriptionId);
      // Another client's subscription answers exactly like one that does not exist.
      if (!subscription || (request.clientId !== undefined && subscription.clientId !== request.clientId))
        throw new NotFoundError(`subscription ${request.subscriptionId} not found`);
    }
    if (request.since && request.since.getTime() > Date.now()) throw new ValidationError("since is in the future", "since");
    for (const id of request.relaySubscriptionIds ?? []) {
      const subscription = await this.deps.subscriptions.get(id);
      if (!subscription || subscription.clientId !== request.clientId || !isRelay(subscription))
        throw new NotFoundError(`relay subscription ${JSON.stringify(id.slice(0, 64))} not found`);
    }
    const filter: ActivityFilter = {
      ...(request.clientId !== undefined ? { clientId: request.clientId } : {}),
      ...(request.subscriptionId ? { subscriptionId: request.subscriptionId } : {}),
      ...(request.event ? { event: request.event } : {}),
      ...(request.outcome ? { outcome: request.outcome } : {}),
      ...(request.relaySubscriptionIds?.length ? { relaySubscriptionIds: request.relaySubscriptionIds } : {}),
    };
    const leases = await this.deps.leases.hold(request.relaySubscriptionIds ?? []);
    const live = this.deps.feed.attach(filter);
    try {
      await this.deps.feed.announced();
      const replay = request.since ? await this.#replay(filter, request.since) : [];
      return new Watch(replay, live, async (jobId) => (await this.deps.notifications.get(jobId))?.body, leases);
    } catch (error) {
      live.close();
      leases.release();
      throw error;
    }
  }

  async #replay(filter: ActivityFilter, since: Date): Promise<DeliveryActivity[]> {
    const activities: DeliveryActivity[] = [];
    let count = 0;
    for (const subscription of await this.#subscriptionsOf(filter)) {
      if (filter.event && subscription.event !== filter.event) continue;
      for (const notification of await this.#createdSince(subscription.id, since)) {
        if (++count > MAX_REPLAY_NOTIFICATIONS) {
          throw new ValidationError(
            `more than ${MAX_REPLAY_NOTIFICATIONS} notifications to replay since ${since.toISOString()}: choose a later since or a narrower filter`,
            "since",
          );
        }
        const attempts = await this.deps.notifications.listAttempts(notification.id);
        activities.push(...activitiesFromLog(notification, attempts, since).filter((activity) => matchesFilter(filter, activity)));
      }
    }
    return activities.sort((a, b) => a.at.getTime() - b.at.getTime());
  }

  async #subscriptionsOf(filter: ActivityFilter): Promise<Subscription[]> {
    if (filter.subscriptionId) {
      const subscription = await this.deps.subscriptions.get(filter.subscriptionId);
      return subscription ? [subscription] : [];
    }
    const clientIds = filter.clientId !== undefined ? [filter.clientId] : (await this.deps.clients.list()).map((client) => client.id);
    const all: Subscription[] = [];
    for (const clientId of clientIds) {
      for (let page = await this.deps.subscriptions.listByClient(clientId, PAGE); page.length > 0; ) {
        all.push(...page);
        const last = page[page.length - 1] as Subscription;
        page =
          page.length < PAGE ? [] : await this.deps.subscriptions.listByClient(clientId, PAGE, { createdAt: last.createdAt, id: last.id });
      }
    }
    return all;
  }

  /** The subscription's notifications created at or after `since`, newest first. */
  async #createdSince(subscriptionId: string, since: Date): Promise<Notification[]> {
    const found: Notification[] = [];
    for (let before: { createdAt: Date; id: string } | undefined; ; ) {
      const page = await this.deps.notifications.list({ subscriptionId, limit: PAGE, ...(before ? { before } : {}) });
      for (const notification of page) {
        if (notification.createdAt < since) return found;
        found.push(notification);
        if (found.length > MAX_REPLAY_NOTIFICATIONS) return found;
      }
      const last = page[page.length - 1];
      if (!last || page.length < PAGE) return found;
      before = { createdAt: last.createdAt, id: last.id };
    }
  }
}
