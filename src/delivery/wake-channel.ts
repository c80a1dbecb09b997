import { BaseNotificationChannel, type JobNotification, type NotificationChannel, toJobId } from "agenda";
import { DELIVER_JOB } from "./agenda-jobs.js";

/**
 * "Delivery jobs are due", naming no job: whoever hears it looks for them.
 * No nextRunAt, so that Agenda never skips it as due after its next scan.
 */
export function dueJobsNotification(source?: string): JobNotification {
  return {
    jobId: toJobId(""),
    jobName: DELIVER_JOB,
    nextRunAt: null,
    priority: 0,
    timestamp: new Date(),
    ...(source !== undefined ? { source } : {}),
  };
}

/**
 * The channel through which Agenda hears "jobs are due". This process
 * wakes its own Agenda directly (`wake`); other instances on the same
 * database are told through `remote` (PostgreSQL LISTEN/NOTIFY, a MongoDB
 * change stream), and what they announce reaches `onRemote`, not Agenda:
 * their jobs must be locked first (the feed's fetch), then Agenda is woken.
 *
 * Agenda publishes nothing here: it does so only for jobs created through
 * its own API, which delivery jobs never are. No job state events either
 * (no publishState): nothing listens to them, and on PostgreSQL they would
 * cost three NOTIFY round trips per delivery.
 */
export class WakeChannel extends BaseNotificationChannel {
  #wakePending = false;
  #announcing = false;
  #announceAgain = false;
  #unsubscribeRemote: (() => void) | undefined;

  constructor(
    private readonly source: string,
    private readonly remote: NotificationChannel | undefined,
    private readonly onRemote: () => void,
    private readonly onError: (error: unknown) => void,
  ) {
    super({ channelName: DELIVER_JOB });
    // For the channel's whole life, not only while connected: @agendajs/postgres-backend hands its LISTEN
    // connection back to the pool still wired to re-emit that connection's errors, and an error with no
    // listener would throw.
    remote?.on("error", onError);
  }

  async connect(): Promise<void> {
    if (this.remote) {
      this.#unsubscribeRemote = this.remote.subscribe((notification) => {
        if (notification.source !== this.source) this.onRemote();
      });
      // Unreachable at start: it reconnects by itself, and until then the poll finds other instances' jobs.
      await this.remote.connect().catch(this.onError);
    }
    this.setState("connected");
  }

  async disconnect(): Promise<void> {
    this.#unsubscribeRemote?.();
    this.#unsubscribeRemote = undefined;
    if (this.remote) await this.remote.disconnect().catch(this.onError);
    this.handlers.clear();
    this.setState("disconnected");
  }

  async publish(): Promise<void> {}

  /** Lets Agenda look for jobs to run now, at most once per turn of the event loop. */
  wake(): void {
    if (this.#wakePending || this.state !== "connected") return;
    this.#wakePending = true;
    setImmediate(() => {
      this.#wakePending = false;
      this.notifyHandlers(dueJobsNotification()).catch(this.onError);
    });
  }

  /**
   * Tells other instances that due jobs were inserted unlocked. One
   * announcement at a time: those asked for meanwhile share the next. Best
   * effort: their poll finds the jobs anyway.
   */
  announce(): void {
    const remote = this.remote;
    if (remote?.state !== "connected") return;
    if (this.#announcing) {
      this.#announceAgain = true;
      return;
    }
    this.#announcing = true;
    void (async () => {
      do {
        this.#announceAgain = false;
        await remote.publish(dueJobsNotification(this.source)).catch(this.onError);
      } while (this.#announceAgain && remote.state === "connected");
      this.#announcing = false;
    })();
  }
}
