import type { LaneJob } from "./fair-lanes.js";
import type { LockedBatch } from "./job-source.js";
import { LeftBehind } from "./left-behind.js";

/** A fetch on its way: when it went out, and what it was told to leave out. */
export interface SentFetch {
  readonly sentAt: number;
  readonly leftOut: { endpoints: readonly string[]; clients: readonly string[] };
  /** Hand-backs before it went out. */
  readonly handBacks: number;
}

/**
 * What the feed knows of its source from its own fetches and hand-backs:
 *
 * - whether the source is *drained*: a fetch read every due job it could
 *   see and nothing was announced or handed back since; it vouches for that
 *   `drainedForMs`, long enough for new jobs to go in locked (JobFeed.reserve)
 *   without overtaking due ones;
 * - whether a *backlog* is being read (the last fetch read a full window),
 *   during which fetches are spaced (JobFeed's SPACING);
 * - who left due jobs behind (left-behind.ts).
 */
export class SourceView {
  #drainedAt = 0;
  #handBacks = 0;
  #backlog = false;
  #lastSentAt = Number.NEGATIVE_INFINITY;
  readonly #leftBehind = new LeftBehind();

  constructor(
    private readonly options: { drainedForMs: number; fetchSpacingMs: number },
    private readonly now: () => number,
  ) {}

  /** The last fetch left due jobs it could have taken. */
  get backlog(): boolean {
    return this.#backlog;
  }

  vouchedDrained(): boolean {
    return this.#drainedAt > 0 && this.now() - this.#drainedAt < this.options.drainedForMs;
  }

  /** A fetch went out at or after `at`: it reads every job due by then. */
  fetchedSince(at: number): boolean {
    return this.#lastSentAt >= at;
  }

  /** How long a fetch wanted now should wait: while a backlog is read and jobs wait, `fetchSpacingMs` after the last. */
  spacingLeft(waiting: number): number {
    if (!this.#backlog || waiting === 0) return 0;
    return Math.max(0, this.#lastSentAt + this.options.fetchSpacingMs - this.now());
  }

  /** Due jobs may have come that no fetch saw (announced, or a fetch failed). */
  changed(): void {
    this.#drainedAt = 0;
  }

  /** Jobs went back to the source: due again there, and their endpoints left behind. */
  handedBack(jobs: readonly LaneJob[]): void {
    this.#drainedAt = 0;
    this.#handBacks++;
    for (const job of jobs) this.#leftBehind.add(job.endpoint, job.clientId);
  }

  /** A fetch goes out, leaving out those with no budget (they leave their due jobs behind). */
  sent(leftOut: SentFetch["leftOut"]): SentFetch {
    const sentAt = this.now();
    this.#lastSentAt = sentAt;
    for (const endpoint of leftOut.endpoints) this.#leftBehind.add(endpoint);
    for (const clientId of leftOut.clients) this.#leftBehind.add(undefined, clientId);
    return { sentAt, leftOut, handBacks: this.#handBacks };
  }

  /** Its answer. `askedAgain`: a request came while it was in flight (the source may have changed since it read). */
  answered(fetch: SentFetch, batch: LockedBatch<LaneJob>, askedAgain: boolean): void {
    const current = !askedAgain && fetch.handBacks === this.#handBacks;
    this.#drainedAt = batch.drained && current ? fetch.sentAt : 0;
    this.#backlog = !batch.drained;
    if (batch.drained && current) {
      this.#leftBehind.resetTo({
        endpoints: [...fetch.leftOut.endpoints, ...batch.passedOver.endpoints],
        clients: [...fetch.leftOut.clients, ...batch.passedOver.clients],
      });
      return;
    }
    for (const endpoint of batch.passedOver.endpoints) this.#leftBehind.add(endpoint);
    for (const clientId of batch.passedOver.clients) this.#leftBehind.add(undefined, clientId);
  }

  /** See LeftBehind.roomFor: whether a finished job's endpoint or client now has room for jobs it left behind. */
  roomFor(job: LaneJob, waiting: { endpoint: number; client: number }): boolean {
    return this.#leftBehind.roomFor(job, waiting);
  }
}
