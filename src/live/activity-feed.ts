import { type ActivityFilter, activitiesOf, type DeliveryActivity, matchesFilter } from "../domain/delivery-activity.js";
import type { DeliveryEvent, DeliveryObserver } from "../domain/delivery-events.js";
import type { RelayResult } from "../domain/relay.js";
import { ActivityWatcher } from "./activity-watcher.js";

/**
 * How instances sharing a database pass activities to each other: one
 * implementation per store (PostgreSQL LISTEN/NOTIFY; none for the embedded
 * store, which one process owns).
 */
export interface ActivityChannel {
  /** Starts hearing the other instances' activities, and the relay answers reported to them. */
  start(deliver: (activities: DeliveryActivity[]) => void, onRelayResult: (result: RelayResult) => void): Promise<void>;
  /** Whether another instance has watchers now: only then is publishing worth its cost. */
  readonly othersWatching: boolean;
  /** Sends this instance's activities to the others (best effort). */
  publish(activities: DeliveryActivity[]): void;
  /** Tells the others whether this instance has watchers; resolves once told. */
  setWatching(watching: boolean): Promise<void>;
  /** Passes a relay answer to the other instances, for the one whose attempt waits for it; false when there are none. */
  publishRelayResult(result: RelayResult): boolean;
  stop(): Promise<void>;
}

/** The channel of a store that one process owns: nobody else to tell. */
export const processOnlyChannel: ActivityChannel = {
  async start() {},
  othersWatching: false,
  publish() {},
  setWatching: async () => {},
  publishRelayResult: () => false,
  async stop() {},
};

/** Bodies up to this many bytes travel with a relay request between instances (one NOTIFY holds under 8000 bytes). */
const RELAYED_BODY_LIMIT = 2_000;

/**
 * The live feed: observes the delivery engine, hands each activity to the
 * watchers of this instance whose filter it matches, and passes it to other
 * instances through the channel (and theirs to ours). With nobody watching
 * anywhere, observing costs one check per event.
 */
export class ActivityFeed implements DeliveryObserver {
  readonly #watchers = new Set<ActivityWatcher>();
  #announced: Promise<void> = Promise.resolve();

  constructor(
    private readonly channel: ActivityChannel,
    /** Activities one watcher may fall behind by before it is cut off. */
    private readonly watcherCapacity: number,
  ) {}

  /** `onRelayResult` hears the relay answers reported on other instances. */
  start(onRelayResult: (result: RelayResult) => void): Promise<void> {
    return this.channel.start((activities) => this.#deliver(activities), onRelayResult);
  }

  observe(event: DeliveryEvent): void {
    if (this.#watchers.size === 0 && !this.channel.othersWatching) return;
    const activities = activitiesOf(event);
    this.#deliver(activities);
    if (this.channel.othersWatching) this.channel.publish(activities);
  }

  /**
   * A relay request, for its listener, wherever it is connected. Another
   * instance gets it without a body larger than RELAYED_BODY_LIMIT (the
   * watch there reads it from the delivery log).
   */
  relay(activity: DeliveryActivity): void {
    this.#deliver([activity]);
    if (!this.channel.othersWatching) return;
    const { body, ...rest } = activity;
    this.channel.publish([body !== undefined && Buffer.byteLength(body) <= RELAYED_BODY_LIMIT ? activity : rest]);
  }

  /** A relay answer no attempt of this instance waits for: maybe another one's does. False when there is no other instance. */
  passRelayResult(result: RelayResult): boolean {
    return this.channel.publishRelayResult(result);
  }

  /** A new watcher, fed from now on until it is closed or falls behind. */
  attach(filter: ActivityFilter): ActivityWatcher {
    const watcher = new ActivityWatcher(filter, this.watcherCapacity, (ended) => this.#detach(ended));
    this.#watchers.add(watcher);
    if (this.#watchers.size === 1) this.#announced = this.channel.setWatching(true);
    return watcher;
  }

  /** Resolves once the other instances have been told that this one has watchers: from then on they send their activity. */
  announced(): Promise<void> {
    return this.#announced;
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
    if (this.#watchers.delete(watcher) && this.#watchers.size === 0) void this.channel.setWatching(false);
  }

  #deliver(activities: readonly DeliveryActivity[]): void {
    for (const watcher of this.#watchers) {
      for (const activity of activities) if (matchesFilter(watcher.filter, activity)) watcher.offer(activity);
    }
  }
}
