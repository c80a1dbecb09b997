import { outcome } from "../outcome.js";
import { type Clock, systemClock } from "./clock.js";
import { DueAlarm } from "./due-alarm.js";
import { FairLanes, type LaneJob, type LaneLimits, type LaneOccupancy } from "./fair-lanes.js";
import type { FeedJob, JobSource, LockedBatch, LockRequest } from "./job-source.js";
import { LaneBudgets } from "./lane-budgets.js";
import { type SentFetch, SourceView } from "./source-view.js";

export interface JobFeedOptions {
  /** Jobs one lock statement takes; also the most the feed holds waiting. */
  batchSize: number;
  limits: LaneLimits;
  /** A job whose lock is older is handed back to the source instead of out (its holder must have time to run it). */
  handoutMaxAgeMs: number;
  /** A fetch that found the source drained vouches for it this long (see `reserve`). */
  drainedForMs: number;
  /** While a backlog is read (the last fetch read a full window), fetches are at least this far apart. */
  fetchSpacingMs: number;
  /** After a failed fetch, wait this long (doubling per failure, up to `maxMs`) before the next. */
  backoff: { initialMs: number; maxMs: number };
  /** Jobs scheduled to run later (`dueAt`) are fetched once they fall due, within `stepMs`; see due-alarm.ts. */
  due: { stepMs: number; maxPending: number };
  clock?: Clock;
  /** Jobs can be taken now: whoever runs them should call `take()`. */
  onRunnable: () => void;
  /** How each fetch ended, for health. */
  onFetched: (outcome: { ok: true } | { ok: false; error: unknown }) => void;
  /** Handing locks back failed; they expire by themselves. */
  onUnlockError: (error: unknown) => void;
}

/**
 * The feed's modes. Every change goes through one `#enter…` method, which
 * checks where it may come from.
 *
 * - IDLE: no fetch under way or wanted. A request for jobs (`take()`
 *   finding none runnable, `pulse()`, a job finishing whose endpoint or
 *   client left due jobs in the source, a retry scheduled with `dueAt`
 *   falling due, new jobs waiting to go in locked: `untilVouched`) starts
 *   one: → FETCHING, or
 *   → SPACING, or → WAITING_FOR_ROOM. `take()` alone makes none while a
 *   fetch found the source drained less than `drainedForMs` ago and nothing
 *   was announced or handed back since.
 * - WAITING_FOR_ROOM: a fetch is wanted, but the lanes hold a full batch.
 *   Once they run below half → FETCHING (or SPACING).
 * - SPACING: a fetch is wanted while a backlog is being read (the last
 *   fetch read a full window) and jobs wait in the lanes, less than
 *   `fetchSpacingMs` after the last one went out: each fetch then takes what
 *   finished meanwhile in one statement, instead of one statement per
 *   finish. The timer → FETCHING (or WAITING_FOR_ROOM if the lanes filled
 *   up); with nothing left waiting, a request → FETCHING at once.
 * - FETCHING: one lock statement in flight. Requests meanwhile are
 *   remembered (`fetchAgain`) so nothing committed before them is missed;
 *   `take()` finding nothing is no such request, unless it handed stale
 *   jobs back.
 *   New jobs may wait for its answer, which may vouch for the source, to
 *   go in locked (`untilVouched`, which fetches from IDLE to get one).
 *   Success → IDLE, then a new request at once if one came in, or if the
 *   batch came back with jobs and more due (a backlog is read a batch at a
 *   time). Failure → BACKING_OFF.
 * - BACKING_OFF: the last fetch failed (the store is unreachable, a
 *   statement was refused). Requests wait; the timer → FETCHING (or
 *   WAITING_FOR_ROOM), with the delay doubled up to its cap while failures
 *   go on.
 * - RELEASED: stopped for good. Every waiting job's lock is handed back, a
 *   fetch still in flight hands back what it gets, and nothing more is
 *   fetched or handed out. Entered from any mode by `release()`.
 *
 * Jobs wait in fair lanes (fair-lanes.ts) until their endpoint and client
 * have a free slot. A fetch asks for each endpoint and client only what it
 * can start soon (its budget, lane-budgets.ts), and the source leaves out
 * those with none. A waiting job whose lock grew older than
 * `handoutMaxAgeMs` goes back to the source (a sweep runs while any wait),
 * so that a hung endpoint's backlog never sits locked here; it is fetched
 * again once that endpoint has room (left-behind.ts).
 */
export type FeedMode = "IDLE" | "WAITING_FOR_ROOM" | "SPACING" | "FETCHING" | "BACKING_OFF" | "RELEASED";

export class JobFeed<J extends FeedJob> {
  #mode: FeedMode = "IDLE";
  readonly #lanes: FairLanes<J>;
  readonly #budgets: LaneBudgets<J>;
  readonly #clock: Clock;
  /** A request for jobs came while a fetch was in flight. */
  #fetchAgain = false;
  #fetching: Promise<void> | undefined;
  readonly #source: SourceView;
  /** The BACKING_OFF or SPACING timer. */
  #timer: unknown;
  #backoffMs: number;
  #sweepTimer: unknown;
  /** Since when fetches have been wanted without one succeeding (for health); 0 when none is. */
  #wantedSince = 0;
  /** Hand-backs under way, for `release()` to wait for. */
  readonly #handingBack = new Set<Promise<void>>();
  /** Callers waiting for the fetch in flight to answer (see untilVouched), and the timer that ends their wait. */
  #vouchWaiters: { done: Promise<void>; end: () => void } | undefined;
  readonly #alarm: DueAlarm;

  constructor(
    private readonly source: JobSource<J>,
    private readonly options: JobFeedOptions,
  ) {
    this.#lanes = new FairLanes<J>(options.limits);
    this.#clock = options.clock ?? systemClock;
    this.#budgets = new LaneBudgets(this.#lanes, options.limits, Math.ceil(options.batchSize / 4), () => this.#clock.now());
    this.#backoffMs = options.backoff.initialMs;
    this.#source = new SourceView(options, () => this.#clock.now());
    this.#alarm = new DueAlarm({
      ...options.due,
      clock: this.#clock,
      // A fetch sent since reads the job (or passes it over, and it is left behind): no need for another.
      onDue: (at) => {
        if (!this.#source.fetchedSince(at)) this.pulse();
      },
    });
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

  /** Requests in flight to one endpoint. */
  inFlightTo(endpoint: string): number {
    return this.#lanes.inFlightTo(endpoint);
  }

  /**
   * The next job to run, counted in flight until `finish()`; undefined when
   * none may run now, in which case more are looked for (see IDLE), unless
   * a fetch is under way already.
   */
  take(): J | undefined {
    if (this.#mode === "RELEASED") return undefined;
    const stale: J[] = [];
    let job = this.#lanes.take();
    while (job && !this.#fresh(job)) {
      this.#lanes.abandon(job);
      stale.push(job);
      job = this.#lanes.take();
    }
    this.#handBack(stale);
    if (!job) {
      // A fetch under way brings what it finds; asking again for nothing new would only keep its answer
      // from vouching. Jobs just handed back are new to the source: they are asked for.
      if (stale.length > 0 || (!this.#source.vouchedDrained() && this.#mode !== "FETCHING")) this.#requestFetch();
    } else {
      this.#refillIfLow();
    }
    return job;
  }

  /**
   * The job's run is over: its endpoint's slot is free again. `answered`:
   * whether it made a request whose answer (or timeout) says how fast its
   * endpoint is; a run that made none (nothing to deliver, the store
   * failing) teaches the endpoint's limits nothing.
   */
  finish(job: J, answered = true): void {
    if (answered) this.#lanes.finish(job);
    else this.#lanes.abandon(job);
    this.#budgets.finished(job);
    if (this.#mode === "RELEASED") return;
    const waiting = { endpoint: this.#lanes.waitingFor(job.endpoint), client: this.#lanes.waitingForClient(job.clientId) };
    // It left jobs in the source while it had no room; now it has.
    if (this.#source.roomFor(job, waiting)) this.#requestFetch();
    if (this.#lanes.runnable) this.options.onRunnable();
    this.#refillIfLow();
  }

  /** A job handed out but never started goes back to the front of its line. */
  putBack(job: J): void {
    if (this.#mode === "RELEASED") {
      this.#lanes.abandon(job);
      this.#handBack([job]);
      return;
    }
    this.#lanes.putBack(job);
  }

  /** Due jobs may have come that no fetch saw (inserted unlocked, by us or another instance). */
  pulse(): void {
    this.#source.changed();
    this.#requestFetch();
  }

  /**
   * A job was saved to run again at `at` (a retry): it is fetched for once
   * it falls due (see due-alarm.ts), not left to the next poll.
   */
  dueAt(at: Date): void {
    // Called once the retry is saved: a fetch sent before then, even within this millisecond, skipped the job
    // (still locked), so only one sent after it reads it, even when it fell due earlier (a requeue, due at once).
    if (this.#mode !== "RELEASED") this.#alarm.at(Math.max(at.getTime(), this.#clock.now() + 1));
  }

  /**
   * Which of these new jobs may be inserted already locked for this
   * instance (and then `adopt`ed): only while a fetch found the source
   * drained moments ago and nothing was announced since, so that new jobs
   * never overtake due ones waiting in the source, and only as far as each
   * endpoint's and client's budget and the batch have room.
   */
  reserve(jobs: ReadonlyArray<LaneJob>): boolean[] {
    if (this.#mode === "RELEASED" || !this.#source.vouchedDrained()) return jobs.map(() => false);
    return this.#budgets.fit(jobs, this.options.batchSize - this.#lanes.waiting);
  }

  /**
   * When nothing vouches for the source and no backlog is being read,
   * fetches (unless one is under way whose answer may vouch for it) and
   * resolves once that fetch answered or failed, `maxWaitMs` passed, the
   * feed was released, or something made its answer unable to vouch (a
   * request, a hand-back), whichever comes first; undefined when there is
   * nothing to wait for (a fetch under way was asked again; or no fetch can
   * go out now: backing off, spacing, waiting for room). New jobs that
   * wait can then go in locked (`reserve`). Going in unlocked instead costs
   * an announcement and a fetch of their own, and runs them no sooner; a
   * publish arriving during each such fetch would keep the next one
   * unlocked too.
   */
  untilVouched(maxWaitMs: number): Promise<void> | undefined {
    if (this.#mode === "RELEASED" || this.#source.backlog || this.#source.vouchedDrained()) return undefined;
    if (this.#mode === "IDLE") this.#requestFetch();
    if (this.#mode !== "FETCHING" || this.#fetchAgain) return undefined;
    if (!this.#vouchWaiters) {
      const waited = outcome();
      const timer = this.#clock.setTimeout(() => this.#endVouchWait(), maxWaitMs);
      this.#vouchWaiters = {
        done: waited.promise,
        end: () => {
          this.#clock.clearTimeout(timer);
          waited.settle();
        },
      };
    }
    return this.#vouchWaiters.done;
  }

  /** Takes jobs inserted locked for this instance into the lanes. */
  adopt(jobs: readonly J[]): void {
    if (jobs.length === 0) return;
    if (this.#mode === "RELEASED") {
      this.#handBack(jobs);
      return;
    }
    for (const job of jobs) this.#lanes.add(job);
    this.#sweepLater();
    if (this.#lanes.runnable) this.options.onRunnable();
  }

  /** Stops for good: hands back every waiting job's lock, including those of a fetch still in flight. */
  async release(): Promise<void> {
    this.#enterReleased();
    await this.#fetching;
    this.#handBack(this.#lanes.remove(() => true));
    await Promise.all(this.#handingBack);
  }

  #fresh(job: J): boolean {
    return this.#clock.now() - job.lockedAt.getTime() < this.options.handoutMaxAgeMs;
  }

  /** With due jobs left in the source, or a request put off, fetch before the lanes run dry. */
  #refillIfLow(): void {
    if ((this.#source.backlog || this.#mode === "WAITING_FOR_ROOM") && this.#lanes.waiting < this.options.batchSize / 2)
      this.#requestFetch();
  }

  #hasRoom(): boolean {
    return this.#lanes.waiting < this.options.batchSize;
  }

  #requestFetch(): void {
    switch (this.#mode) {
      case "IDLE":
      case "WAITING_FOR_ROOM":
        this.#fetchWhenDue();
        return;
      case "SPACING":
        // Nothing waits any more: no reason to hold back.
        if (this.#lanes.waiting === 0) {
          this.#clearTimer();
          this.#enterFetching();
        }
        return;
      case "FETCHING":
        this.#fetchAgain = true;
        // Its answer can no longer vouch for the source: nobody waits for it.
        this.#endVouchWait();
        return;
      case "BACKING_OFF":
      case "RELEASED":
        return;
    }
  }

  /** Fetches now, after the spacing, or once there is room. */
  #fetchWhenDue(): void {
    if (!this.#hasRoom()) {
      this.#enterWaitingForRoom();
      return;
    }
    const wait = this.#source.spacingLeft(this.#lanes.waiting);
    if (wait > 0) this.#enterSpacing(wait);
    else this.#enterFetching();
  }

  #enterWaitingForRoom(): void {
    if (this.#mode !== "IDLE" && this.#mode !== "WAITING_FOR_ROOM" && this.#mode !== "SPACING" && this.#mode !== "BACKING_OFF")
      throw new Error(`cannot wait for room in mode ${this.#mode}`);
    this.#mode = "WAITING_FOR_ROOM";
  }

  #enterSpacing(wait: number): void {
    if (this.#mode !== "IDLE" && this.#mode !== "WAITING_FOR_ROOM") throw new Error(`cannot space fetches in mode ${this.#mode}`);
    this.#mode = "SPACING";
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#mode !== "SPACING") return;
      if (this.#hasRoom()) this.#enterFetching();
      else this.#enterWaitingForRoom();
    }, wait);
  }

  #enterFetching(): void {
    if (this.#mode !== "IDLE" && this.#mode !== "WAITING_FOR_ROOM" && this.#mode !== "SPACING" && this.#mode !== "BACKING_OFF")
      throw new Error(`cannot fetch in mode ${this.#mode}`);
    if (!this.#hasRoom()) throw new Error("cannot fetch with the lanes full");
    this.#mode = "FETCHING";
    this.#fetchAgain = false;
    const budgets = this.#budgets.all();
    const request: LockRequest = {
      limit: this.options.batchSize - this.#lanes.waiting,
      endpointBudgets: budgets.endpoints,
      clientBudgets: budgets.clients,
      defaultPerEndpoint: this.options.limits.endpoint.floor,
      defaultPerClient: this.options.limits.client.floor,
    };
    const noBudget = (all: Map<string, number>) => [...all].filter(([, budget]) => budget === 0).map(([key]) => key);
    const sent = this.#source.sent({ endpoints: noBudget(budgets.endpoints), clients: noBudget(budgets.clients) });
    if (this.#wantedSince === 0) this.#wantedSince = sent.sentAt;
    this.#fetching = this.source.lockDue(request).then(
      (batch) => this.#fetched(batch, sent),
      (error: unknown) => this.#failed(error),
    );
  }

  #fetched(batch: LockedBatch<J>, sent: SentFetch): void {
    this.#fetching = undefined;
    if (this.#mode === "RELEASED") {
      this.#handBack(batch.jobs);
      return;
    }
    this.#backoffMs = this.options.backoff.initialMs;
    this.#wantedSince = 0;
    this.options.onFetched({ ok: true });
    this.#source.answered(sent, batch, this.#fetchAgain);
    for (const job of batch.jobs) this.#lanes.add(job);
    this.#enterIdle();
    if (batch.jobs.length > 0) {
      this.#sweepLater();
      this.options.onRunnable();
    }
    // Someone asked meanwhile; or this found jobs and more are due.
    if (this.#fetchAgain || (this.#source.backlog && batch.jobs.length > 0)) this.#requestFetch();
    // Its answer is taken in: whether it vouches for the source is known.
    this.#endVouchWait();
  }

  #failed(error: unknown): void {
    this.#fetching = undefined;
    this.#endVouchWait();
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
    this.#source.changed();
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.options.backoff.maxMs);
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#mode !== "BACKING_OFF") return;
      // Filled up meanwhile (jobs put back, or inserted locked): fetch once they run low.
      if (this.#hasRoom()) this.#enterFetching();
      else this.#enterWaitingForRoom();
    }, delay);
  }

  #enterReleased(): void {
    this.#mode = "RELEASED";
    this.#endVouchWait();
    this.#wantedSince = 0;
    this.#clearTimer();
    this.#alarm.stop();
    if (this.#sweepTimer !== undefined) this.#clock.clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
  }

  #endVouchWait(): void {
    const waiters = this.#vouchWaiters;
    this.#vouchWaiters = undefined;
    waiters?.end();
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** While jobs wait, hands back those whose lock grew too old to hand out. */
  #sweepLater(): void {
    if (this.#sweepTimer !== undefined || this.#lanes.waiting === 0) return;
    this.#sweepTimer = this.#clock.setTimeout(() => {
      this.#sweepTimer = undefined;
      if (this.#mode === "RELEASED") return;
      this.#handBack(this.#lanes.remove((job) => !this.#fresh(job)));
      this.#sweepLater();
    }, this.options.handoutMaxAgeMs / 2);
  }

  /**
   * Returns jobs to the source. They are due again there, so nothing vouches
   * for the source being drained any more (new jobs must not overtake them),
   * and their endpoints are fetched for again once they have room.
   */
  #handBack(jobs: readonly J[]): void {
    if (jobs.length === 0) return;
    this.#source.handedBack(jobs);
    // The fetch in flight may have read before they went back: its answer vouches for nothing.
    this.#endVouchWait();
    const handing = this.source.unlock(jobs).catch(this.options.onUnlockError);
    this.#handingBack.add(handing);
    void handing.finally(() => this.#handingBack.delete(handing));
  }
}
