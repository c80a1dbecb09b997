import type { JobStore } from "../job-store.js";

/**
 * A subscription's `rateLimitPerSecond`: its deliveries go out in send slots
 * spaced 1/rate apart, taken from one counter per subscription in the store
 * (JobStore.takeSlot), so the limit holds across every instance. A job whose
 * turn has not come is handed back due at its slot, which it keeps
 * (JobStore.waitForSlot): waiting holds no lane, makes no attempt and uses
 * up no retry; the job is locked twice, once to take its slot and once to
 * send. A kept slot more than STALE_SLOT_MS in the past (the job was held
 * up, by a backlog or a crash) is given up for a new one, so a backlog
 * draining never sends a burst: in any one second a subscription gets at
 * most its rate, plus one delivery whose slot came late.
 */
export const STALE_SLOT_MS = 1000;

/** A slot this close ahead is taken as now: not worth a second lock. */
const EARLY_MS = 5;

export class Throttle {
  constructor(private readonly store: Pick<JobStore, "takeSlot">) {}

  /**
   * When a job of a subscription limited to `ratePerSecond` may be sent:
   * undefined for now, or the slot it waits for. `kept`: the slot the job
   * already holds.
   */
  async admit(subscriptionId: string, ratePerSecond: number, kept: Date | undefined, now = new Date()): Promise<Date | undefined> {
    if (kept) {
      const late = now.getTime() - kept.getTime();
      if (late < -EARLY_MS) return kept;
      if (late <= STALE_SLOT_MS) return undefined;
    }
    const slot = await this.store.takeSlot(subscriptionId, now, 1000 / ratePerSecond);
    return slot.getTime() - now.getTime() > EARLY_MS ? slot : undefined;
  }
}
