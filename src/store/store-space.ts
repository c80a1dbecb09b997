import { StoreFullError } from "../domain/errors.js";

/** Whether the store can write now, and if not, why: what /readyz reports of it. */
export interface SpaceReport {
  ok: boolean;
  reason?: string;
}

/**
 * Whether the store has room to write. Two modes:
 * - `roomy` (the start): nothing to do.
 * - `full`: entered when a statement fails for want of disk space
 *   (`noticed`); a probe writes about a megabyte every `probeEveryMs`, and
 *   the first probe that succeeds returns to `roomy`. A failure noticed
 *   while full only updates the reason.
 * Reads keep working while full, and so may writes that find room in pages
 * the database already holds: only the probe ends the mode, so readiness does
 * not flap with each call that happens to fit.
 */
export class StoreSpace {
  #full: { since: Date; reason: string; probe: NodeJS.Timeout } | undefined;
  #probing = false;
  #stopped = false;

  constructor(
    private readonly options: {
      /** Writes something that needs new disk space; rejects (with a StoreFullError) while there is none. */
      probe: () => Promise<void>;
      probeEveryMs: number;
      /** Told as the mode changes: the reason when it turns full, undefined when there is room again. */
      onChange: (reason: string | undefined) => void;
      now?: () => Date;
    },
  ) {}

  /** A statement failed for want of space: `full` from now until a probe succeeds. */
  noticed(error: StoreFullError): void {
    if (this.#stopped) return;
    if (this.#full) {
      this.#full.reason = error.detail;
      return;
    }
    const probe = setInterval(() => void this.#probe(), this.options.probeEveryMs);
    probe.unref();
    this.#full = { since: (this.options.now ?? (() => new Date()))(), reason: error.detail, probe };
    this.options.onChange(error.detail);
  }

  report(): SpaceReport {
    if (!this.#full) return { ok: true };
    return {
      ok: false,
      reason: `the store is full (since ${this.#full.since.toISOString()}): ${this.#full.reason}; free space on its disk`,
    };
  }

  /** Ends probing (the store is closing). */
  stop(): void {
    this.#stopped = true;
    if (this.#full) clearInterval(this.#full.probe);
  }

  async #probe(): Promise<void> {
    if (this.#probing || !this.#full) return;
    this.#probing = true;
    try {
      await this.options.probe();
      if (this.#stopped || !this.#full) return;
      clearInterval(this.#full.probe);
      this.#full = undefined;
      this.options.onChange(undefined);
    } catch (error) {
      if (error instanceof StoreFullError && this.#full) this.#full.reason = error.detail;
    } finally {
      this.#probing = false;
    }
  }
}
