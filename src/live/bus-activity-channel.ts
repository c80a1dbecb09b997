import type { DeliveryActivity } from "../domain/delivery-activity.js";
import type { RelayResult } from "../domain/relay.js";
import type { ActivityChannel } from "./activity-feed.js";
import { decodeActivities, encodeActivities } from "./activity-messages.js";
import type { MessageBus } from "./message-bus.js";
import { TOPICS } from "./message-bus.js";
import { RemoteInterest } from "./remote-interest.js";

const INTEREST_INTERVAL_MS = 5_000;

/**
 * Activities between instances over a message bus. An instance publishes
 * only while another announces watchers (RemoteInterest): with nobody
 * watching anywhere, deliveries send nothing. An instance with watchers
 * announces itself every few seconds, and at once when another asks (on
 * connecting), so that a new instance learns of existing watchers at once.
 */
export class BusActivityChannel implements ActivityChannel {
  readonly #interest: RemoteInterest;
  #deliver: (activities: DeliveryActivity[]) => void = () => {};
  #onRelayResult: (result: RelayResult) => void = () => {};
  #pending: DeliveryActivity[] = [];
  #flushQueued = false;
  #announcer: NodeJS.Timeout | undefined;
  #watching = false;
  #stopped = false;

  constructor(
    private readonly bus: MessageBus,
    private readonly source: string,
    private readonly onError: (error: unknown) => void,
    now: () => number = Date.now,
    private readonly intervalMs = INTEREST_INTERVAL_MS,
  ) {
    this.#interest = new RemoteInterest(intervalMs, now);
  }

  start(deliver: (activities: DeliveryActivity[]) => void, onRelayResult: (result: RelayResult) => void): Promise<void> {
    this.#deliver = deliver;
    this.#onRelayResult = onRelayResult;
    return this.bus.start(
      (topic, payload) => this.#heard(topic, payload),
      () => void this.#announce(this.#watching, true),
    );
  }

  get othersWatching(): boolean {
    return this.#interest.anyWatching;
  }

  publish(activities: DeliveryActivity[]): void {
    this.#pending.push(...activities);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    setImmediate(() => {
      this.#flushQueued = false;
      const batch = this.#pending;
      this.#pending = [];
      for (const message of encodeActivities(this.source, batch)) void this.#send(TOPICS.activity, message);
    });
  }

  setWatching(watching: boolean): Promise<void> {
    this.#watching = watching;
    clearInterval(this.#announcer);
    this.#announcer = undefined;
    if (watching) {
      this.#announcer = setInterval(() => void this.#announce(true), this.intervalMs);
      this.#announcer.unref();
    }
    return this.#announce(watching);
  }

  publishRelayResult(result: RelayResult): boolean {
    // A relay answer's body is cut to 4096 characters (RelayAnswers): its JSON fits one message.
    void this.#send(TOPICS.relayResult, JSON.stringify(result));
    return true;
  }

  async stop(): Promise<void> {
    if (this.#watching) await this.setWatching(false);
    clearInterval(this.#announcer);
    this.#stopped = true;
    await this.bus.stop();
  }

  #announce(watching: boolean, ask = false): Promise<void> {
    return this.#send(TOPICS.interest, JSON.stringify({ s: this.source, w: watching, ...(ask ? { ask } : {}) }));
  }

  async #send(topic: string, payload: string): Promise<void> {
    if (!this.#stopped) await this.bus.send(topic, payload);
  }

  #heard(topic: string, payload: string): void {
    try {
      if (topic === TOPICS.interest) {
        const { s, w, ask } = JSON.parse(payload) as { s?: unknown; w?: unknown; ask?: unknown };
        if (typeof s !== "string" || s === this.source) return;
        this.#interest.heard(s, w === true);
        if (ask === true && this.#watching) void this.#announce(true);
      } else if (topic === TOPICS.relayResult) {
        this.#onRelayResult(JSON.parse(payload) as RelayResult);
      } else if (topic === TOPICS.activity) {
        const message = decodeActivities(payload);
        if (message && message.source !== this.source) this.#deliver(message.activities);
      }
    } catch (error) {
      this.onError(error);
    }
  }
}
