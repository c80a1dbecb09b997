import { StoreUnavailableError } from "../domain/errors.js";

export interface HealthReport {
  ok: boolean;
  /** Why not, in words an operator can act on. */
  reason?: string;
}

type Outcome = { ok: true } | { ok: false; error: unknown };

/** One failure may be a blip (a connection replaced under a statement): only a second in a row counts. */
const FAILURES_BEFORE_UNHEALTHY = 2;

/** Failures in a row, as long as each comes within `maxAgeMs` of the one before; older ones no longer count. */
class FailureStreak {
  #count = 0;
  #since = 0;
  #last = 0;
  #error: unknown;

  constructor(private readonly maxAgeMs: number) {}

  record(outcome: Outcome, now: number): void {
    if (outcome.ok || now - this.#last > this.maxAgeMs) this.#count = 0;
    if (outcome.ok) return;
    if (this.#count === 0) this.#since = now;
    this.#count++;
    this.#last = now;
    this.#error = outcome.error;
  }

  /** The failing streak, once it counts. */
  failing(now: number): { since: number; error: unknown } | undefined {
    if (this.#count < FAILURES_BEFORE_UNHEALTHY || now - this.#last > this.maxAgeMs) return undefined;
    return { since: this.#since, error: this.#error };
  }
}

/**
 * Whether deliveries can run, from what the scheduler saw last: its polls
 * of the job store failing (twice or more in a row), its saves of job states
 * failing, or no poll succeeding for longer than `stallAfterMs` while one was
 * wanted. Recovers by itself with the next poll and save that succeed, or,
 * with nothing to save (idle), once the last failed save is `stallAfterMs`
 * old and polls succeed.
 */
export class DeliveryHealth {
  readonly #polls: FailureStreak;
  readonly #saves: FailureStreak;

  constructor(
    private readonly options: {
      stallAfterMs: number;
      /** How long polls have been wanted without one succeeding (0: none is). */
      unservedMs: () => number;
      now?: () => number;
    },
  ) {
    this.#polls = new FailureStreak(Number.POSITIVE_INFINITY);
    // Saves come only with deliveries: once idle, failed ones stop counting after stallAfterMs (polls go on).
    this.#saves = new FailureStreak(options.stallAfterMs);
  }

  polled(outcome: Outcome): void {
    this.#polls.record(outcome, this.#now());
  }

  saved(outcome: Outcome): void {
    this.#saves.record(outcome, this.#now());
  }

  report(): HealthReport {
    const now = this.#now();
    const polling = this.#polls.failing(now);
    if (polling) return { ok: false, reason: `the delivery scheduler ${describe(polling, "polling its store")}` };
    const saving = this.#saves.failing(now);
    if (saving) return { ok: false, reason: `the delivery scheduler ${describe(saving, "saving job states")}` };
    const unserved = this.options.unservedMs();
    if (unserved > this.options.stallAfterMs) {
      return { ok: false, reason: `no poll of the delivery scheduler's store has succeeded for ${Math.round(unserved / 1000)} s` };
    }
    return { ok: true };
  }

  #now(): number {
    return (this.options.now ?? Date.now)();
  }
}

function describe(failing: { since: number; error: unknown }, doing: string): string {
  const message = failing.error instanceof Error ? failing.error.message : String(failing.error);
  const since = new Date(failing.since).toISOString();
  return failing.error instanceof StoreUnavailableError
    ? `cannot reach its store (since ${since}): ${message}`
    : `fails ${doing} (since ${since}): ${message}`;
}
