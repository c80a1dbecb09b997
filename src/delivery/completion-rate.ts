/**
 * Completions per key over the last one to two seconds: two one-second
 * buckets, the older dropped as the clock moves on. Keys with nothing in
 * either bucket are forgotten, so memory follows the active keys only.
 */
export class CompletionRate {
  #current = new Map<string, number>();
  #previous = new Map<string, number>();
  #bucketStart: number;

  constructor(private readonly now: () => number) {
    this.#bucketStart = now();
  }

  record(key: string): void {
    this.#roll();
    this.#current.set(key, (this.#current.get(key) ?? 0) + 1);
  }

  /** Completions of `key` in the current and the previous second. */
  recent(key: string): number {
    this.#roll();
    return (this.#current.get(key) ?? 0) + (this.#previous.get(key) ?? 0);
  }

  /** Every key with a recent completion. */
  keys(): IterableIterator<string> {
    this.#roll();
    return new Set([...this.#current.keys(), ...this.#previous.keys()]).values();
  }

  #roll(): void {
    const elapsed = this.now() - this.#bucketStart;
    if (elapsed < 1000) return;
    this.#previous = elapsed < 2000 ? this.#current : new Map();
    this.#current = new Map();
    this.#bucketStart += Math.floor(elapsed / 1000) * 1000;
  }
}
