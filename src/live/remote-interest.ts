/**
 * Whether other instances have watchers, as far as their announcements
 * tell. An instance with watchers announces itself every `intervalMs`;
 * another one counts as watching for three intervals after its last
 * announcement, so that one lost announcement does not stop the flow.
 *
 * Modes (per remote instance, kept as its expiry time):
 * - QUIET: never heard, or its last announcement is older than 3 intervals.
 * - WATCHING: heard within 3 intervals; `heard(source, false)` (it has no
 *   watchers left) returns it to QUIET at once.
 */
export class RemoteInterest {
  readonly #watchingUntil = new Map<string, number>();

  constructor(
    readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  heard(source: string, watching: boolean): void {
    if (watching) this.#watchingUntil.set(source, this.now() + 3 * this.intervalMs);
    else this.#watchingUntil.delete(source);
  }

  get anyWatching(): boolean {
    const now = this.now();
    for (const [source, until] of this.#watchingUntil) {
      if (until > now) return true;
      this.#watchingUntil.delete(source);
    }
    return false;
  }
}
