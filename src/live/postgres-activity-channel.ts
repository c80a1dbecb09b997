import type pg from "pg";
import type { DeliveryActivity } from "../domain/delivery-activity.js";
import type { ActivityChannel } from "./activity-feed.js";
import { decodeActivities, encodeActivities } from "./activity-messages.js";
import { RemoteInterest } from "./remote-interest.js";

/** Activities, batched per turn of the event loop. */
const ACTIVITY_CHANNEL = "wh_live_activity";
/** `{"s": source, "w": watching, "ask": true?}`: who has watchers; `ask` (sent on connecting) asks the others to say. */
const INTEREST_CHANNEL = "wh_live_interest";
const INTEREST_INTERVAL_MS = 5_000;
const RECONNECT_MIN_MS = 200;
const RECONNECT_MAX_MS = 5_000;

/**
 * Activities between instances on one PostgreSQL database, by LISTEN/NOTIFY
 * on one held connection (replaced with backoff when it drops). An instance
 * publishes only while another announces watchers (RemoteInterest): with
 * nobody watching, deliveries cost no NOTIFY.
 */
export class PostgresActivityChannel implements ActivityChannel {
  readonly #interest: RemoteInterest;
  #client: pg.PoolClient | undefined;
  #deliver: (activities: DeliveryActivity[]) => void = () => {};
  #pending: DeliveryActivity[] = [];
  #flushQueued = false;
  #announcer: NodeJS.Timeout | undefined;
  #reconnectDelayMs = RECONNECT_MIN_MS;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #watching = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly source: string,
    private readonly onError: (error: unknown) => void,
  ) {
    this.#interest = new RemoteInterest(INTEREST_INTERVAL_MS);
  }

  async start(deliver: (activities: DeliveryActivity[]) => void): Promise<void> {
    this.#deliver = deliver;
    // Unreachable at start: it keeps trying; until then watchers see this instance's activity only.
    await this.#connect().catch((error: unknown) => this.#connectionLost(error));
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
      for (const message of encodeActivities(this.source, batch)) this.#notify(ACTIVITY_CHANNEL, message);
    });
  }

  setWatching(watching: boolean): void {
    this.#watching = watching;
    clearInterval(this.#announcer);
    this.#announcer = undefined;
    this.#announce(watching);
    if (watching) {
      this.#announcer = setInterval(() => this.#announce(true), INTEREST_INTERVAL_MS);
      this.#announcer.unref();
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    if (this.#announcer) this.setWatching(false);
    const client = this.#client;
    this.#client = undefined;
    client?.release(true);
  }

  #announce(watching: boolean, ask = false): void {
    this.#notify(INTEREST_CHANNEL, JSON.stringify({ s: this.source, w: watching, ...(ask ? { ask } : {}) }));
  }

  #notify(channel: string, payload: string): void {
    if (this.#stopped) return;
    this.pool.query("SELECT pg_notify($1, $2)", [channel, payload]).catch(this.onError);
  }

  async #connect(): Promise<void> {
    const client = await this.pool.connect();
    client.on("notification", (message) => this.#heard(message.channel, message.payload ?? ""));
    client.on("error", (error) => this.#connectionLost(error));
    try {
      await client.query(`LISTEN ${ACTIVITY_CHANNEL}; LISTEN ${INTEREST_CHANNEL}`);
    } catch (error) {
      client.release(true);
      throw error;
    }
    if (this.#stopped) {
      client.release(true);
      return;
    }
    this.#client = client;
    this.#reconnectDelayMs = RECONNECT_MIN_MS;
    // Watchers elsewhere announce themselves only every few seconds: ask now.
    this.#announce(this.#watching, true);
  }

  #connectionLost(error: unknown): void {
    this.onError(error);
    this.#client?.release(true);
    this.#client = undefined;
    if (this.#stopped || this.#reconnectTimer) return;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#connect().catch((next: unknown) => this.#connectionLost(next));
    }, this.#reconnectDelayMs);
    this.#reconnectDelayMs = Math.min(RECONNECT_MAX_MS, 2 * this.#reconnectDelayMs);
  }

  #heard(channel: string, payload: string): void {
    if (channel === INTEREST_CHANNEL) {
      const { s, w, ask } = parseInterest(payload);
      if (s === undefined || s === this.source) return;
      this.#interest.heard(s, w);
      if (ask && this.#watching) this.#announce(true);
      return;
    }
    const message = decodeActivities(payload);
    if (message && message.source !== this.source) this.#deliver(message.activities);
  }
}

function parseInterest(payload: string): { s?: string; w: boolean; ask: boolean } {
  try {
    const parsed = JSON.parse(payload) as { s?: unknown; w?: unknown; ask?: unknown };
    return { ...(typeof parsed.s === "string" ? { s: parsed.s } : {}), w: parsed.w === true, ask: parsed.ask === true };
  } catch {
    return { w: false, ask: false };
  }
}
