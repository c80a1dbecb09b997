import { BaseNotificationChannel } from "agenda";
import type { ChangeStream, Db } from "mongodb";
import { DELIVER_JOB } from "../../delivery/agenda-jobs.js";
import { dueJobsNotification } from "../../delivery/wake-channel.js";
import { collections } from "./documents.js";

/**
 * Other instances' new, unlocked jobs, heard through a change stream on the
 * notifications (MongoDB has no LISTEN/NOTIFY; change streams need a replica
 * set). The insert is the announcement, so `publish` sends nothing. A broken
 * stream reconnects with backoff; until then the poll finds the jobs.
 */
export class MongoInsertChannel extends BaseNotificationChannel {
  #stream: ChangeStream | undefined;

  constructor(
    private readonly db: Db,
    private readonly owner: string,
  ) {
    super({
      channelName: DELIVER_JOB,
      reconnect: { enabled: true, maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 200, maxDelayMs: 5_000 },
    });
  }

  async connect(): Promise<void> {
    this.clearReconnect();
    const stream = collections(this.db).notifications.watch([
      { $match: { operationType: "insert", "fullDocument.job.lockedAt": null, "fullDocument.job.insertedBy": { $ne: this.owner } } },
    ]);
    stream.on("change", () => {
      this.notifyHandlers(dueJobsNotification()).catch((error: unknown) => this.emit("error", error));
    });
    stream.on("error", (error) => {
      this.emit("error", error);
      this.#stream = undefined;
      void stream.close().catch(() => {});
      this.scheduleReconnect();
    });
    this.#stream = stream;
    this.setState("connected");
  }

  async disconnect(): Promise<void> {
    this.clearReconnect();
    await this.#stream?.close().catch(() => {});
    this.#stream = undefined;
    this.handlers.clear();
    this.setState("disconnected");
  }

  async publish(): Promise<void> {}
}
