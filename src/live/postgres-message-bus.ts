import type pg from "pg";
import { Coalescer } from "../coalescer.js";
import { isDataError } from "../store/postgres/rows.js";
import { type MessageBus, TOPICS } from "./message-bus.js";

const RECONNECT_MIN_MS = 200;
const RECONNECT_MAX_MS = 5_000;
/** Messages in the order given: PostgreSQL delivers one transaction's notifications in the order they were made. */
const SEND = `
  SELECT pg_notify(m.topic, m.payload)
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m (topic, payload, n)
  ORDER BY m.n`;

/**
 * LISTEN/NOTIFY on one held connection of `pool`, replaced with backoff when
 * it drops; NOTIFY through the pool's other connections.
 */
export class PostgresMessageBus implements MessageBus {
  #client: pg.PoolClient | undefined;
  #onMessage: (topic: string, payload: string) => void = () => {};
  #onConnected: () => void = () => {};
  #reconnectDelayMs = RECONNECT_MIN_MS;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  /**
   * One statement in flight at a time, the messages sent meanwhile going
   * next as one: listeners hear one instance's messages in the order it sent
   * them (two statements on two of the pool's connections may commit in
   * either order).
   */
  readonly #sends = new Coalescer<{ topic: string; payload: string }, void>(
    async (messages) => {
      // Messages still queued when the bus stopped go nowhere: the pool is closing.
      if (this.#stopped) return messages.map(() => undefined);
      await this.pool.query(SEND, [messages.map((message) => message.topic), messages.map((message) => message.payload)]);
      return messages.map(() => undefined);
    },
    // One message PostgreSQL refuses (a payload of 8000 bytes or more) fails alone, not the others sent with it.
    { splitOn: isDataError },
  );

  constructor(
    private readonly pool: pg.Pool,
    private readonly onError: (error: unknown) => void,
  ) {}

  async start(onMessage: (topic: string, payload: string) => void, onConnected: () => void): Promise<void> {
    this.#onMessage = onMessage;
    this.#onConnected = onConnected;
    // Unreachable at start: it keeps trying; until then watchers see this instance's activity only.
    await this.#connect().catch((error: unknown) => this.#connectionLost(error));
  }

  async send(topic: string, payload: string): Promise<void> {
    if (this.#stopped) return;
    await this.#sends.call({ topic, payload }).catch(this.onError);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    const client = this.#client;
    this.#client = undefined;
    client?.release(true);
  }

  async #connect(): Promise<void> {
    const client = await this.pool.connect();
    client.on("notification", (message) => this.#onMessage(message.channel, message.payload ?? ""));
    client.on("error", (error) => this.#connectionLost(error));
    try {
      await client.query(
        Object.values(TOPICS)
          .map((topic) => `LISTEN ${topic};`)
          .join(" "),
      );
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
    this.#onConnected();
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
}
