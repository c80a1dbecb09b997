import type { ChangeStream, Collection, Db } from "mongodb";
import type { MessageBus } from "./message-bus.js";

/** The live feed's messages: a capped collection, so that old ones make room by themselves. */
const COLLECTION = "wh_live_messages";
const COLLECTION_BYTES = 16 * 1024 * 1024;
const RECONNECT_MIN_MS = 200;
const RECONNECT_MAX_MS = 5_000;

interface MessageDocument {
  topic: string;
  payload: string;
  at: Date;
}

/**
 * Messages between instances on one MongoDB database (MongoDB has no
 * LISTEN/NOTIFY): each is inserted into a capped collection, and every
 * instance hears the inserts through a change stream (a replica set, as
 * MONGODB_CHANGE_STREAMS requires). A broken stream reconnects with backoff.
 */
export class MongoMessageBus implements MessageBus {
  #stream: ChangeStream<MessageDocument> | undefined;
  #onMessage: (topic: string, payload: string) => void = () => {};
  #onConnected: () => void = () => {};
  #reconnectDelayMs = RECONNECT_MIN_MS;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
  ) {}

  async start(onMessage: (topic: string, payload: string) => void, onConnected: () => void): Promise<void> {
    this.#onMessage = onMessage;
    this.#onConnected = onConnected;
    await this.db.createCollection(COLLECTION, { capped: true, size: COLLECTION_BYTES }).catch((error: { codeName?: string }) => {
      if (error.codeName !== "NamespaceExists") throw error;
    });
    this.#connect();
  }

  async send(topic: string, payload: string): Promise<void> {
    if (this.#stopped) return;
    await this.#collection()
      .insertOne({ topic, payload, at: new Date() })
      .then(() => {}, this.onError);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    await this.#stream?.close().catch(() => {});
    this.#stream = undefined;
  }

  #collection(): Collection<MessageDocument> {
    return this.db.collection<MessageDocument>(COLLECTION);
  }

  #connect(): void {
    if (this.#stopped) return;
    const stream = this.#collection().watch<MessageDocument>([{ $match: { operationType: "insert" } }]);
    stream.on("change", (change) => {
      if (change.operationType === "insert") this.#onMessage(change.fullDocument.topic, change.fullDocument.payload);
    });
    stream.on("error", (error) => {
      this.onError(error);
      this.#stream = undefined;
      void stream.close().catch(() => {});
      this.#reconnect();
    });
    this.#stream = stream;
    this.#reconnectDelayMs = RECONNECT_MIN_MS;
    this.#onConnected();
  }

  #reconnect(): void {
    if (this.#stopped || this.#reconnectTimer) return;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#connect();
    }, this.#reconnectDelayMs);
    this.#reconnectDelayMs = Math.min(RECONNECT_MAX_MS, 2 * this.#reconnectDelayMs);
  }
}
