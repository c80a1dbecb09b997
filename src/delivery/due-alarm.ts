import type { Clock } from "./clock.js";

/** The longest timer Node sets (a longer one fires after 1 ms): a due time further out is re-armed for on the way. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

export interface DueAlarmOptions {
  /** Due times are rounded up to a multiple of this: jobs falling due within one step wake it once. */
  stepMs: number;
  /** At most this many distinct due times are kept; later ones are left to the poll. */
  maxPending: number;
  clock: Clock;
  /** Something scheduled here fell due. */
  onDue: () => void;
}

/**
 * Wakes its owner when jobs this instance scheduled (retries) fall due, so
 * that they are fetched as they come due rather than all at once by the
 * next poll: a retry runs on time, and a poll's burst of them does not
 * queue ahead of new deliveries. One timer, for the earliest due time kept.
 */
export class DueAlarm {
  /** Distinct due times (multiples of stepMs), ascending. */
  readonly #due: number[] = [];
  #timer: unknown;
  /** When the timer fires; undefined when none is set. */
  #armedFor: number | undefined;
  #stopped = false;

  constructor(private readonly options: DueAlarmOptions) {}

  /** Jobs fall due at `at` (ms since the epoch). */
  at(at: number): void {
    if (this.#stopped) return;
    const due = Math.ceil(at / this.options.stepMs) * this.options.stepMs;
    const index = this.#insertionIndex(due);
    if (this.#due[index] === due) return;
    if (index >= this.options.maxPending) return;
    this.#due.splice(index, 0, due);
    if (this.#due.length > this.options.maxPending) this.#due.pop();
    if (index === 0) this.#arm();
  }

  /** Due times kept (for tests and status). */
  get pending(): number {
    return this.#due.length;
  }

  /** Forgets everything and sets no more timers. */
  stop(): void {
    this.#stopped = true;
    this.#due.length = 0;
    this.#disarm();
  }

  #insertionIndex(due: number): number {
    let low = 0;
    let high = this.#due.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#due[middle] as number) < due) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  #arm(): void {
    const next = this.#due[0];
    if (next === undefined || next === this.#armedFor) return;
    this.#disarm();
    this.#armedFor = next;
    const wait = Math.min(LONGEST_TIMER_MS, Math.max(0, next - this.options.clock.now()));
    this.#timer = this.options.clock.setTimeout(() => this.#fire(), wait);
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = undefined;
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedFor = undefined;
    const now = this.options.clock.now();
    let fell = 0;
    while (fell < this.#due.length && (this.#due[fell] as number) <= now) fell++;
    this.#due.splice(0, fell);
    this.#arm();
    if (fell > 0) this.options.onDue();
  }
}
