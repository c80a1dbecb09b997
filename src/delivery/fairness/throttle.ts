import type { JobStore } from "../job-store.js";

/** A slot this close ahead is taken as now (a timer fires a little early or late). */
const EARLY_MS = 1;

/** Wake-ups for slots this close together are one: at most a hundred a second. */
const WAKE_GRAIN_MS = 10;

/**
 * A subscription's `rateLimitPerSecond`, across every instance, by two
 * counters per subscription in the store:
 * - a waiting job is handed a slot of its own (JobStore.takeSlot), slots
 *   spaced 1/rate apart, and is handed back due at it, which it keeps
 *   (JobStore.waitForSlot): waiting holds no lane, makes no attempt and
 *   uses up no retry. So a queue drains in order, one wake-up per job.
 * - a job whose slot has come goes out only if the subscription's last
 *   request went out at least 1/rate ago (JobStore.claimSend); else it
 *   waits for that time. Jobs held up past their slots (a busy instance,
 *   a restart) so never go out as a burst: in any one second a receiver
 *   gets at most its rate, and one more where the second starts and ends
 *   on a request.
 */
export class Throttle {
  /** The feed's wake-ups at the slots jobs were handed back for, by time (WAKE_GRAIN_MS grains). */
  readonly #wakeUps = new Map<number, NodeJS.Timeout>();

  constructor(
    private readonly store: Pick<JobStore, "takeSlot" | "claimSend">,
    /** Looks for due jobs now: a job handed back goes out at its slot, not at the next poll. */
    private readonly lookForDueJobs: () => void,
  ) {}

  /**
   * When a job of a subscription limited to `ratePerSecond` may be sent:
   * undefined for now, or the time it waits for (its slot). `kept`: the
   * slot the job already holds.
   */
  async admit(subscriptionId: string, ratePerSecond: number, kept: Date | undefined, now = new Date()): Promise<Date | undefined> {
    const intervalMs = 1000 / ratePerSecond;
    const slot = kept ?? (await this.store.takeSlot(subscriptionId, now, intervalMs));
    if (slot.getTime() - now.getTime() > EARLY_MS) return this.#wakeAt(slot);
    const notBefore = await this.store.claimSend(subscriptionId, new Date(), intervalMs);
    return notBefore ? this.#wakeAt(notBefore) : undefined;
  }

  /** Drops the wake-ups still waiting (the engine stops). */
  stop(): void {
    for (const timer of this.#wakeUps.values()) clearTimeout(timer);
    this.#wakeUps.clear();
  }

  #wakeAt(slot: Date): Date {
    const at = Math.ceil(slot.getTime() / WAKE_GRAIN_MS) * WAKE_GRAIN_MS;
    if (!this.#wakeUps.has(at)) {
      const timer = setTimeout(() => {
        this.#wakeUps.delete(at);
        this.lookForDueJobs();
      }, at - Date.now());
      timer.unref();
      this.#wakeUps.set(at, timer);
    }
    return slot;
  }
}
