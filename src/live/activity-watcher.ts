import type { ActivityFilter, DeliveryActivity } from "../domain/delivery-activity.js";
import { WatcherTooSlowError } from "../domain/errors.js";

/**
 * One watcher's queue of activities, between the feed that offers them as
 * they happen and the stream that sends them as fast as the client reads.
 * At most `capacity` wait; one more and the watcher is cut off rather than
 * kept in memory without bound.
 *
 * Modes:
 * - OPEN: offers are queued; `next` hands them out in order, or waits.
 * - OVERFLOWED (from OPEN, on an offer to a full queue): the queue is
 *   dropped at once; `next` throws WatcherTooSlowError. Final.
 * - CLOSED (from OPEN, by `close`: the client went away, the service stops):
 *   offers are ignored; `next` answers done. Final.
 */
export class ActivityWatcher {
  #mode: "open" | "overflowed" | "closed" = "open";
  #queue: DeliveryActivity[] = [];
  #waiter: { promise: Promise<void>; wake: () => void } | undefined;

  constructor(
    readonly filter: ActivityFilter,
    private readonly capacity: number,
    private readonly onEnd: (watcher: ActivityWatcher) => void = () => {},
  ) {}

  get mode(): "open" | "overflowed" | "closed" {
    return this.#mode;
  }

  /** Called by the feed; never blocks. */
  offer(activity: DeliveryActivity): void {
    if (this.#mode !== "open") return;
    if (this.#queue.length >= this.capacity) {
      this.#setMode("overflowed");
      return;
    }
    this.#queue.push(activity);
    this.#wake();
  }

  close(): void {
    if (this.#mode === "open") this.#setMode("closed");
  }

  /** The next activity; undefined once closed. Rejects once overflowed. */
  async next(): Promise<DeliveryActivity | undefined> {
    for (;;) {
      if (this.#mode === "overflowed") throw new WatcherTooSlowError(this.capacity);
      const activity = this.#queue.shift();
      if (activity) return activity;
      if (this.#mode === "closed") return undefined;
      await this.waitForActivity();
    }
  }

  /** Resolves when an activity is queued or the mode changes; the same promise for every caller meanwhile. */
  waitForActivity(): Promise<void> {
    if (this.#queue.length > 0 || this.#mode !== "open") return Promise.resolve();
    if (!this.#waiter) {
      let wake = () => {};
      const promise = new Promise<void>((resolve) => {
        wake = resolve;
      });
      this.#waiter = { promise, wake };
    }
    return this.#waiter.promise;
  }

  #setMode(mode: "overflowed" | "closed"): void {
    if (this.#mode !== "open") throw new Error(`watcher is ${this.#mode} already`);
    this.#mode = mode;
    this.#queue = [];
    this.#wake();
    this.onEnd(this);
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.wake();
  }
}
