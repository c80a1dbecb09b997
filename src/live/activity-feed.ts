import { type ActivityFilter, activitiesOf, type DeliveryActivity, matchesFilter } from "../domain/delivery-activity.js";
import type { DeliveryEvent, DeliveryObserver } from "../domain/delivery-events.js";
import { ActivityWatcher } from "./activity-watcher.js";

/**
 * How instances sharing a database pass activities to each other: one
 * implementation per store (PostgreSQL LISTEN/NOTIFY; none for the embedded
 * store, which one process owns).
 */
export interface ActivityChannel {
  /** Starts hearing the other instances' activities. */
  start(deliver: (activities: DeliveryActivity[]) => void): Promise<void>;
  /** Whether another instance has watchers now: only then is publishing worth its cost. */
  readonly othersWatching: boolean;
  /** Sends this instance's activities to the others (best effort). */
  publish(activities: DeliveryActivity[]): void;
  /** Tells the others whether this instance has watchers. */
  setWatching(watching: boolean): void;
  stop(): Promise<void>;
}

/** The channel of a store that one process owns: nobody else to tell. */
export const processOnlyChannel: ActivityChannel = {
  async start() {},
  othersWatching: false,
  publish() {},
  setWatching() {},
  async stop() {},
};

/**
 * The live feed: observes the delivery engine, hands each activity to the
 * watchers of this instance whose filter it matches, and passes it to other
 * instances through the channel (and theirs to ours). With nobody watching
 * anywhere, observing costs one check per event.
 */
export class ActivityFeed implements DeliveryObserver {
  readonly #watchers = new Set<ActivityWatcher>();

  constructor(
    private readonly channel: ActivityChannel,
    /** Activities one watcher may fall behind by before it is cut off. */
    private readonly watcherCapacity: number,
  ) {}

  start(): Promise<void> {
    return this.channel.start((activities) => this.#deliver(activities));
  }

  observe(event: DeliveryEvent): void {
    if (this.#watchers.size === 0 && !this.channel.othersWatching) return;
    const activities = activitiesOf(event);
    this.#deliver(activities);
    if (this.channel.othersWatching) this.channel.publish(activities);
  }

  /** A new watcher, fed from now on until it is closed or falls behind. */
  attach(filter: ActivityFilter): ActivityWatcher {
    const watcher = new ActivityWatcher(filter, this.watcherCapacity, (ended) => this.#detach(ended));
    this.#watchers.add(watcher);
    if (this.#watchers.size === 1) this.channel.setWatching(true);
    return watcher;
  }

  get watcherCount(): number {
    return this.#watchers.size;
  }

  /** Ends every watch (the service stops) and stops hearing other instances. */
  async stop(): Promise<void> {
    for (const watcher of [...this.#watchers]) watcher.close();
    await this.channel.stop();
  }

  #detach(watcher: ActivityWatcher): void {
    if (this.#watchers.delete(watcher) && this.#watchers.size === 0) this.channel.setWatching(false);
  }

  #deliver(activities: readonly DeliveryActivity[]): void {
    for (const watcher of this.#watchers) {
      for (const activity of activities) if (matchesFilter(watcher.filter, activity)) watcher.offer(activity);
    }
  }
}
