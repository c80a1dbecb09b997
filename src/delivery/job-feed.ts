import { type Clock, systemClock } from "./clock.js";
import { DueAlarm } from "./due-alarm.js";
import { LaneBudgets, LeftBehind, withoutBudget } from "./fairness/budgets.js";
import { FairLanes, type LaneJob, type LaneLimits, type LaneOccupancy } from "./fairness/fair-lanes.js";
import type { JobStore, LockedBatch, LockedJob } from "./job-store.js";

export interface JobFeedOptions {
  /** Jobs one lock statement takes; also the most the feed holds waiting. */
  batchSize: number;
  limits: LaneLimits;
  /** A job whose lock is older is unlocked instead of handed out (its holder must have time to run it). */
  handoutMaxAgeMs: number;
  /** A fetch that found nothing more due spares `take()` another fetch this long (new jobs announce themselves: `pulse`). */
  drainedForMs: number;
  /** Jobs saved to run later (`dueAt`) are fetched once they fall due, within `stepMs`; see due-alarm.ts. */
  due: { stepMs: number; maxPending: number };
  /** After a failed fetch, wait this long (doubling per failure, up to `maxMs`) before the next. */
  backoff: { initialMs: number; maxMs: number };
  clock?: Clock;
  /** Jobs can be taken now: whoever runs them should call `take()`. */
  onRunnable: () => void;
  /** How each fetch ended, for health. */
  onFetched: (outcome: { ok: true } | { ok: false; error: unknown }) => void;
  /** Unlocking failed; the locks expire by themselves. */
  onUnlockError: (error: unknown) => void;
}

/**
 * The feed's modes, after graphile-worker's LocalQueue. Every change goes
 * through one `#enter…` method, which checks where it may come from.
 *
 * - IDLE: no fetch under way or wanted. A request for jobs starts one
 *   (→ FETCHING, or → WAITING_FOR_ROOM when the lanes hold a full batch):
 *   `pulse()` (new jobs, another instance's announcement), a job finishing
 *   whose endpoint or client left due jobs in the store, or `take()` finding
 *   nothing runnable (Agenda asks at every poll: retries falling due and
 *   expired locks are found so), unless a fetch found the store drained
 *   less than `drainedForMs` ago.
 * - WAITING_FOR_ROOM: a fetch is wanted, but the lanes hold a full batch.
 *   Once they run below half (jobs taken, or stale ones unlocked) →
 *   FETCHING.
 * - FETCHING: one lock statement in flight. Requests meanwhile are
 *   remembered (`fetchAgain`) so that nothing committed before them is
 *   missed. Success → IDLE, and at once a new request if one came, or if
 *   the batch found more due (a backlog is read a batch at a time). Failure
 *   → BACKING_OFF.
 * - BACKING_OFF: the last fetch failed (the store unreachable, a statement
 *   refused). Requests wait; the timer → FETCHING (or WAITING_FOR_ROOM, if
 *   jobs put back filled the lanes meanwhile), the delay doubling up to its
 *   cap while failures go on.
 * - RELEASED: stopped for good, from any mode (`release()`). Every waiting
 *   job is unlocked, a fetch still in flight unlocks what it gets, and
 *   nothing more is fetched or handed out.
 *
 * Jobs wait in fair lanes (fairness/) until their endpoint and client have
 * a free slot. A fetch asks for each endpoint and client only what it can
 * start soon (its budget), and the store leaves out those with none. A
 * waiting job whose lock grew older than `handoutMaxAgeMs` goes back to the
 * store (a sweep runs while any wait), so that a hung endpoint's backlog
 * never sits locked here; it is fetched again once that endpoint has room.
 */
export type FeedMode = "IDLE" | "WAITING_FOR_ROOM" | "FETCHING" | "BACKING_OFF" | "RELEASED";

export class JobFeed {
  #mode: FeedMode = "IDLE";
  readonly #lanes: FairLanes<LockedJob>;
  readonly #budgets: LaneBudgets<LockedJob>;
  readonly #leftBehind = new LeftBehind();
  readonly #clock: Clock;
  /** A request for jobs came while a fetch was in flight. */
  #fetchAgain = false;
  #fetching: Promise<void> | undefined;
  /** When the last fetch that found the store drained went out; 0 once anything may have come since. */
  #drainedAt = 0;
  /** The last fetch read a full window: more may be due. */
  #backlog = false;
  /** Unlocks so far: a fetch sent before one cannot tell that the store is drained. */
  #unlocks = 0;
  #backoffTimer: unknown;
  #backoffMs: number;
  #sweepTimer: unknown;
  /** Since when fetches have been wanted without one succeeding (for health); 0 when none is. */
  #wantedSince = 0;
  /** Unlocks under way, for `release()` to wait for. */
  readonly #unlocking = new Set<Promise<void>>();
  readonly #alarm: DueAlarm;

  constructor(
    private readonly store: Pick<JobStore, "lockDue" | "unlock">,
    private readonly options: JobFeedOptions,
  ) {
    this.#lanes = new FairLanes<LockedJob>(options.limits);
    this.#clock = options.clock ?? systemClock;
    this.#budgets = new LaneBudgets(this.#lanes, options.limits, Math.ceil(options.batchSize / 4), () => this.#clock.now());
    this.#backoffMs = options.backoff.initialMs;
    this.#alarm = new DueAlarm({ ...options.due, clock: this.#clock, onDue: () => this.pulse() });
  }

  get mode(): FeedMode {
    return this.#mode;
  }

  /** Jobs held waiting for a slot. */
  get waiting(): number {
    return this.#lanes.waiting;
  }

  /** Jobs handed out and not finished. */
  get inFlight(): number {
    return this.#lanes.inFlight;
  }

  /** Requests in flight and jobs waiting, by endpoint (see FairLanes.occupancy). */
  occupancy(): LaneOccupancy {
    return this.#lanes.occupancy();
  }

  /** Whether `take()` would hand out a job now. */
  get runnable(): boolean {
    return this.#mode !== "RELEASED" && this.#lanes.runnable;
  }

  /** How long fetches have been wanted without one succeeding (a fetch under way, or backing off); 0 when none is. */
  unservedMs(): number {
    return this.#wantedSince === 0 ? 0 : this.#clock.now() - this.#wantedSince;
  }

  /** The next job to run, counted in flight until `finish()`; undefined when none may run now (then more are looked for). */
  take(): LockedJob | undefined {
    if (this.#mode === "RELEASED") return undefined;
    const stale: LockedJob[] = [];
    let job = this.#lanes.take();
    while (job && !this.#fresh(job)) {
      this.#lanes.abandon(job);
      stale.push(job);
      job = this.#lanes.take();
    }
    this.#unlock(stale);
    if (job) this.#refillIfLow();
    // A fetch under way brings what it finds. Jobs just unlocked are due again in the store: they are asked for.
    else if (stale.length > 0 || (!this.#drained() && this.#mode !== "FETCHING")) this.#requestFetch();
    return job;
  }

  /**
   * The job's run is over: its endpoint's slot is free again. `answered`:
   * whether it made a request whose answer (or timeout) says how fast its
   * endpoint is; a run that made none teaches the endpoint's limits nothing.
   */
  finish(job: LockedJob, answered = true): void {
    if (answered) this.#lanes.finish(job);
    else this.#lanes.abandon(job);
    this.#budgets.finished(job);
    if (this.#mode === "RELEASED") return;
    const waiting = { endpoint: this.#lanes.waitingFor(job.endpoint), client: this.#lanes.waitingForClient(job.clientId) };
    if (this.#leftBehind.roomFor(job, waiting)) this.#requestFetch();
    if (this.#lanes.runnable) this.options.onRunnable();
    this.#refillIfLow();
  }

  /** A job handed out but never started goes back to the front of its line. */
  putBack(job: LockedJob): void {
    if (this.#mode === "RELEASED") {
      this.#lanes.abandon(job);
      this.#unlock([job]);
      return;
    }
    this.#lanes.putBack(job);
  }

  /**
   * A job was saved to run again at `at` (a retry): it is fetched once it
   * falls due, not a poll later, and retries falling due over a second are
   * fetched as they do rather than in one burst ahead of new deliveries.
   */
  dueAt(at: Date): void {
    if (this.#mode !== "RELEASED") this.#alarm.at(Math.max(at.getTime(), this.#clock.now() + 1));
  }

  /** Due jobs may have come that no fetch saw. */
  pulse(): void {
    this.#drainedAt = 0;
    this.#requestFetch();
  }

  /**
   * Which of these new jobs may go into the store already locked for this
   * instance (and then be `adopt`ed): only while the last fetch found the
   * store drained, so that they overtake no job already due, and only as far
   * as each endpoint's and client's budget and the lanes have room.
   */
  reserve(jobs: readonly LaneJob[]): boolean[] {
    if (this.#mode === "RELEASED" || !this.#drained()) return jobs.map(() => false);
    return this.#budgets.fit(jobs, this.options.batchSize - this.#lanes.waiting);
  }

  /** Takes jobs inserted locked for this instance into the lanes. */
  adopt(jobs: readonly LockedJob[]): void {
    if (jobs.length === 0) return;
    if (this.#mode === "RELEASED") {
      this.#unlock(jobs);
      return;
    }
    for (const job of jobs) this.#lanes.add(job);
    this.#sweepLater();
    if (this.#lanes.runnable) this.options.onRunnable();
  }

  /** Stops for good: unlocks every waiting job, including those of a fetch still in flight. */
  async release(): Promise<void> {
    this.#enterReleased();
    await this.#fetching;
    this.#unlock(this.#lanes.remove(() => true));
    await Promise.all(this.#unlocking);
  }

  #fresh(job: LockedJob): boolean {
    return this.#clock.now() - job.lockedAt.getTime() < this.options.handoutMaxAgeMs;
  }

  #drained(): boolean {
    return this.#drainedAt > 0 && this.#clock.now() - this.#drainedAt < this.options.drainedForMs;
  }

  /** With due jobs left in the store, or a fetch put off for room, fetch before the lanes run dry (unless a fetch is under way). */
  #refillIfLow(): void {
    if (this.#mode === "FETCHING" || this.#lanes.waiting >= this.options.batchSize / 2) return;
    if (this.#backlog || this.#mode === "WAITING_FOR_ROOM") this.#requestFetch();
  }

  #hasRoom(): boolean {
    return this.#lanes.waiting < this.options.batchSize;
  }

  #requestFetch(): void {
    switch (this.#mode) {
      case "IDLE":
      case "WAITING_FOR_ROOM":
        if (this.#hasRoom()) this.#enterFetching();
        else this.#enterWaitingForRoom();
        return;
      case "FETCHING":
        this.#fetchAgain = true;
        return;
      case "BACKING_OFF":
      case "RELEASED":
        return;
    }
  }

  #enterWaitingForRoom(): void {
    if (this.#mode !== "IDLE" && this.#mode !== "WAITING_FOR_ROOM" && this.#mode !== "BACKING_OFF")
      throw new Error(`cannot wait for room in mode ${this.#mode}`);
    this.#mode = "WAITING_FOR_ROOM";
  }

  #enterFetching(): void {
    if (this.#mode !== "IDLE" && this.#mode !== "WAITING_FOR_ROOM" && this.#mode !== "BACKING_OFF")
      throw new Error(`cannot fetch in mode ${this.#mode}`);
    if (!this.#hasRoom()) throw new Error("cannot fetch with the lanes full");
    this.#mode = "FETCHING";
    this.#fetchAgain = false;
    const request = this.#budgets.request(this.options.batchSize - this.#lanes.waiting);
    const leftOut = { endpoints: withoutBudget(request.endpointBudgets), clients: withoutBudget(request.clientBudgets) };
    this.#leftBehind.add(leftOut);
    const sent = { at: this.#clock.now(), unlocks: this.#unlocks, leftOut };
    if (this.#wantedSince === 0) this.#wantedSince = sent.at;
    this.#fetching = this.store.lockDue(request).then(
      (batch) => this.#fetched(batch, sent),
      (error: unknown) => this.#failed(error),
    );
  }

  #fetched(batch: LockedBatch, sent: { at: number; unlocks: number; leftOut: LockedBatch["passedOver"] }): void {
    this.#fetching = undefined;
    if (this.#mode === "RELEASED") {
      this.#unlock(batch.jobs);
      return;
    }
    this.#backoffMs = this.options.backoff.initialMs;
    this.#wantedSince = 0;
    this.options.onFetched({ ok: true });
    // Read before a request or an unlock that came meanwhile, it cannot tell that the store is drained.
    const current = !this.#fetchAgain && sent.unlocks === this.#unlocks;
    this.#backlog = !batch.drained;
    this.#drainedAt = batch.drained && current ? sent.at : 0;
    if (batch.drained && current)
      this.#leftBehind.resetTo({
        endpoints: [...sent.leftOut.endpoints, ...batch.passedOver.endpoints],
        clients: [...sent.leftOut.clients, ...batch.passedOver.clients],
      });
    else this.#leftBehind.add(batch.passedOver);
    for (const job of batch.jobs) this.#lanes.add(job);
    this.#enterIdle();
    if (batch.jobs.length > 0) {
      this.#sweepLater();
      this.options.onRunnable();
    }
    if (this.#fetchAgain || (this.#backlog && batch.jobs.length > 0)) this.#requestFetch();
  }

  #failed(error: unknown): void {
    this.#fetching = undefined;
    if (this.#mode === "RELEASED") return;
    this.options.onFetched({ ok: false, error });
    this.#enterBackingOff();
  }

  #enterIdle(): void {
    if (this.#mode !== "FETCHING") throw new Error(`cannot go idle from mode ${this.#mode}`);
    this.#mode = "IDLE";
  }

  #enterBackingOff(): void {
    if (this.#mode !== "FETCHING") throw new Error(`cannot back off from mode ${this.#mode}`);
    this.#mode = "BACKING_OFF";
    this.#drainedAt = 0;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.options.backoff.maxMs);
    this.#backoffTimer = this.#clock.setTimeout(() => {
      this.#backoffTimer = undefined;
      if (this.#mode !== "BACKING_OFF") return;
      // Jobs put back meanwhile (Agenda stopping) may have filled the lanes.
      if (this.#hasRoom()) this.#enterFetching();
      else this.#enterWaitingForRoom();
    }, delay);
  }

  #enterReleased(): void {
    this.#mode = "RELEASED";
    this.#wantedSince = 0;
    for (const timer of [this.#backoffTimer, this.#sweepTimer]) if (timer !== undefined) this.#clock.clearTimeout(timer);
    this.#backoffTimer = undefined;
    this.#sweepTimer = undefined;
    this.#alarm.stop();
  }

  /** While jobs wait, unlocks those whose lock grew too old to hand out. */
  #sweepLater(): void {
    if (this.#sweepTimer !== undefined || this.#lanes.waiting === 0) return;
    this.#sweepTimer = this.#clock.setTimeout(() => {
      this.#sweepTimer = undefined;
      if (this.#mode === "RELEASED") return;
      this.#unlock(this.#lanes.remove((job) => !this.#fresh(job)));
      this.#refillIfLow();
      this.#sweepLater();
    }, this.options.handoutMaxAgeMs / 2);
  }

  /**
   * Hands jobs' locks back to the store. They are due again there, so the
   * store is no longer known to be drained, and their endpoints are fetched
   * for again once they have room.
   */
  #unlock(jobs: readonly LockedJob[]): void {
    if (jobs.length === 0) return;
    this.#drainedAt = 0;
    this.#unlocks++;
    this.#leftBehind.unlocked(jobs);
    const unlocking = this.store.unlock(jobs.map((job) => ({ id: job.id, heldLock: job.lockedAt }))).catch(this.options.onUnlockError);
    this.#unlocking.add(unlocking);
    void unlocking.finally(() => this.#unlocking.delete(unlocking));
  }
}
