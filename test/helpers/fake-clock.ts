import type { Clock } from "../../src/delivery/clock.js";

/** A clock that moves only when told to, running the timers that fall due on the way. */
export class FakeClock implements Clock {
  #now = 1_000_000;
  #timers: Array<{ at: number; callback: () => void; id: number }> = [];
  #nextId = 1;

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.#nextId++;
    this.#timers.push({ at: this.#now + ms, callback, id });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((timer) => timer.id !== handle);
  }

  /** Timers not yet run. */
  get pending(): number {
    return this.#timers.length;
  }

  /** Moves the clock `ms` forward, running each timer due on the way at its own time. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      this.#timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.#timers[0];
      if (!next || next.at > until) break;
      this.#timers.shift();
      this.#now = next.at;
      next.callback();
    }
    this.#now = until;
  }
}
