import test from "ava";
import type { LockRequest, PassedOver } from "../../src/delivery/fairness/budgets.js";
import { fixedConcurrency } from "../../src/delivery/fairness/earned-concurrency.js";
import { JobFeed, type JobFeedOptions } from "../../src/delivery/job-feed.js";
import type { HeldJob, JobStore, LockedBatch, LockedJob } from "../../src/delivery/job-store.js";
import { FakeClock } from "../helpers/fake-clock.js";

/** Lets promises settled so far run their callbacks (a lock's answer reaching the feed). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** The feed's store port in memory: it records every lock request and answers each one when the test says. */
class FakeStore implements Pick<JobStore, "lockDue" | "unlock"> {
  readonly requests: LockRequest[] = [];
  /** Every unlock call, in order. */
  readonly unlocks: HeldJob[][] = [];
  unlockResult: () => Promise<void> = async () => {};
  readonly #inFlight: Array<{ resolve: (batch: LockedBatch) => void; reject: (error: Error) => void }> = [];

  lockDue(request: LockRequest): Promise<LockedBatch> {
    this.requests.push(request);
    return new Promise((resolve, reject) => this.#inFlight.push({ resolve, reject }));
  }

  unlock(jobs: readonly HeldJob[]): Promise<void> {
    this.unlocks.push([...jobs]);
    return this.unlockResult();
  }

  /** Ids handed back, one list per unlock call. */
  get unlocked(): string[][] {
    return this.unlocks.map((jobs) => jobs.map((job) => job.id));
  }

  /** Answers the oldest lock in flight (by default: drained, nothing passed over) and lets the feed take the answer in. */
  async answer(jobs: LockedJob[], more: { drained?: boolean; passedOver?: Partial<PassedOver> } = {}): Promise<void> {
    this.#next().resolve({ jobs, drained: more.drained ?? true, passedOver: { endpoints: [], clients: [], ...more.passedOver } });
    await settle();
  }

  async fail(): Promise<void> {
    this.#next().reject(new Error("connection refused"));
    await settle();
  }

  #next() {
    const call = this.#inFlight.shift();
    if (!call) throw new Error("no lock in flight");
    return call;
  }
}

const fixed = (perEndpoint: number, perClient: number) => ({
  endpoint: fixedConcurrency(perEndpoint),
  client: fixedConcurrency(perClient),
});

function setup(overrides: Partial<JobFeedOptions> = {}) {
  const clock = new FakeClock();
  const store = new FakeStore();
  const events = { runnable: 0, fetched: [] as boolean[], unlockErrors: 0 };
  const feed = new JobFeed(store, {
    batchSize: 8,
    limits: fixed(2, 4),
    handoutMaxAgeMs: 2000,
    drainedForMs: 250,
    due: { stepMs: 20, maxPending: 4 },
    backoff: { initialMs: 100, maxMs: 800 },
    clock,
    onRunnable: () => events.runnable++,
    onFetched: (outcome) => events.fetched.push(outcome.ok),
    onUnlockError: () => events.unlockErrors++,
    ...overrides,
  });
  let next = 0;
  /** A job locked `ageMs` ago; by default on an endpoint and a client of its own. */
  const job = (lane: { endpoint?: string; clientId?: string; ageMs?: number } = {}): LockedJob => {
    const id = `j${next++}`;
    return {
      id,
      endpoint: lane.endpoint ?? `e-${id}`,
      clientId: lane.clientId ?? `c-${id}`,
      lockedAt: new Date(clock.now() - (lane.ageMs ?? 0)),
    };
  };
  const jobs = (count: number) => Array.from({ length: count }, () => job());
  const takeAll = () => {
    const taken: LockedJob[] = [];
    for (let taking = feed.take(); taking; taking = feed.take()) taken.push(taking);
    return taken;
  };
  /** Moves the clock a millisecond at a time until the next lock goes out; answers how long that took. */
  const msUntilFetch = () => {
    const before = store.requests.length;
    let ms = 0;
    while (store.requests.length === before && ms < 10_000) {
      clock.advance(1);
      ms++;
    }
    return ms;
  };
  return { clock, store, feed, events, job, jobs, takeAll, msUntilFetch };
}

test("IDLE → FETCHING on a pulse; the answer → IDLE, its jobs runnable and handed out in turn", async (t) => {
  const { store, feed, events, jobs, takeAll } = setup();
  t.is(feed.mode, "IDLE");
  t.is(store.requests.length, 0, "nothing is fetched until asked");
  feed.pulse();
  t.is(feed.mode, "FETCHING");
  t.is(store.requests[0]?.limit, 8, "a whole batch of room");
  const batch = jobs(3);
  await store.answer(batch);
  t.is(feed.mode, "IDLE");
  t.deepEqual(events.fetched, [true]);
  t.is(events.runnable, 1);
  t.is(feed.waiting, 3);
  t.true(feed.runnable);
  t.deepEqual(takeAll(), batch);
  t.is(feed.inFlight, 3);
  t.is(store.requests.length, 1, "the store was found drained: take() finding nothing more fetches nothing");
});

test("IDLE → FETCHING when take() finds nothing runnable, unless the store was found drained within drainedForMs", async (t) => {
  const { clock, store, feed } = setup();
  t.is(feed.take(), undefined);
  t.is(feed.mode, "FETCHING");
  t.is(feed.take(), undefined);
  t.is(store.requests.length, 1, "a fetch under way brings what it finds: take() asks for no other");
  await store.answer([]);
  clock.advance(249);
  t.is(feed.take(), undefined);
  t.is(feed.mode, "IDLE", "found drained 249 ms ago: no fetch");
  clock.advance(1);
  feed.take();
  t.is(feed.mode, "FETCHING", "drainedForMs is over");
  await store.answer([], { drained: false });
  t.is(feed.mode, "IDLE", "more due but none of it takeable: no fetch at once");
  feed.take();
  t.is(store.requests.length, 3, "the store was not drained: take() fetches");
  await store.answer([]);
  feed.pulse();
  t.is(store.requests.length, 4, "a pulse fetches though the store was found drained a moment ago");
});

test("FETCHING: requests meanwhile are remembered, and one more fetch follows the answer", async (t) => {
  const { store, feed } = setup();
  feed.pulse();
  feed.pulse();
  feed.pulse();
  t.is(store.requests.length, 1, "one lock at a time");
  await store.answer([]);
  t.is(feed.mode, "FETCHING", "asked again meanwhile: jobs committed before the pulses are looked for");
  t.is(store.requests.length, 2, "once for all of them");
  await store.answer([]);
  t.is(feed.mode, "IDLE");
  feed.take();
  t.is(store.requests.length, 2, "that answer came after every request: the store is known to be drained");
});

test("a backlog is read a batch at a time: an answer that found more due fetches again at once, for the room left", async (t) => {
  const { store, feed, jobs } = setup();
  feed.pulse();
  await store.answer(jobs(3), { drained: false });
  t.is(feed.mode, "FETCHING");
  t.is(store.requests[1]?.limit, 5);
  await store.answer(jobs(2), { drained: false });
  t.is(store.requests[2]?.limit, 3);
  await store.answer(jobs(1));
  t.is(feed.mode, "IDLE", "read to the end");
  t.is(store.requests.length, 3);
  t.is(feed.waiting, 6);
});

test("WAITING_FOR_ROOM: with a full batch waiting the next fetch waits until the lanes run below half", async (t) => {
  const { store, feed, jobs } = setup();
  feed.pulse();
  await store.answer(jobs(8), { drained: false });
  t.is(feed.mode, "WAITING_FOR_ROOM", "more is due, but there is no room for it");
  t.is(store.requests.length, 1);
  for (let i = 0; i < 4; i++) t.truthy(feed.take());
  t.is(feed.waiting, 4);
  t.is(feed.mode, "WAITING_FOR_ROOM", "half a batch still waits");
  feed.take();
  t.is(feed.mode, "FETCHING", "below half");
  t.is(store.requests[1]?.limit, 5);
});

test("IDLE → WAITING_FOR_ROOM on a pulse while the lanes hold a full batch", async (t) => {
  const { store, feed, jobs } = setup();
  feed.pulse();
  await store.answer(jobs(8));
  t.is(feed.mode, "IDLE", "drained: no more wanted");
  feed.pulse();
  t.is(feed.mode, "WAITING_FOR_ROOM");
  t.is(store.requests.length, 1);
  for (let i = 0; i < 5; i++) feed.take();
  t.is(feed.mode, "FETCHING");
  t.is(store.requests[1]?.limit, 5);
});

test("a backlog's last batch, found drained, ends fetching though jobs were taken while it was read", async (t) => {
  // A refill asked for while the fetch is in flight would keep its drained answer from counting, and cost a lock.
  const { store, feed, jobs } = setup();
  feed.pulse();
  await store.answer(jobs(8), { drained: false });
  for (let i = 0; i < 5; i++) feed.take();
  t.is(feed.mode, "FETCHING", "the refill for the backlog");
  feed.take();
  await store.answer([]);
  t.is(feed.mode, "IDLE");
  t.is(store.requests.length, 2, "the refill in flight was the fetch the backlog wanted: no other");
});

test("BACKING_OFF: a failed fetch waits, the delay doubling up to its cap; a success → IDLE and resets it", async (t) => {
  const { store, feed, events, msUntilFetch } = setup();
  feed.pulse();
  await store.fail();
  t.is(feed.mode, "BACKING_OFF");
  t.deepEqual(events.fetched, [false]);
  feed.pulse();
  feed.take();
  t.is(store.requests.length, 1, "requests wait out the delay");
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) {
    delays.push(msUntilFetch());
    t.is(feed.mode, "FETCHING");
    await store.fail();
  }
  t.deepEqual(delays, [100, 200, 400, 800, 800]);
  t.is(msUntilFetch(), 800);
  await store.answer([]);
  t.is(feed.mode, "IDLE");
  t.deepEqual(events.fetched, [false, false, false, false, false, false, true]);
  feed.pulse();
  await store.fail();
  t.is(msUntilFetch(), 100, "the success reset the delay");
});

test("RELEASED: waiting jobs and the jobs of a fetch in flight are handed back; nothing more is fetched or handed out", async (t) => {
  const { clock, store, feed, events, jobs } = setup();
  feed.pulse();
  const waiting = jobs(2);
  await store.answer(waiting, { drained: false });
  t.is(feed.mode, "FETCHING");
  t.true(clock.pending > 0, "a sweep is set");
  const late = jobs(1);
  const released = feed.release();
  t.is(feed.mode, "RELEASED");
  t.is(clock.pending, 0, "every timer is cleared");
  await store.answer(late);
  await released;
  t.deepEqual(store.unlocked, [late.map((job) => job.id), waiting.map((job) => job.id)]);
  t.deepEqual(store.unlocks[1]?.[0], { id: waiting[0]?.id, heldLock: waiting[0]?.lockedAt }, "each with the lock it holds");
  t.deepEqual(events.fetched, [true], "the answer after release is not reported");
  t.is(feed.waiting, 0);
  t.false(feed.runnable);
  t.is(feed.take(), undefined);
  feed.pulse();
  clock.advance(10_000);
  t.is(store.requests.length, 2, "no fetch after release");
  t.is(clock.pending, 0);
});

test("RELEASED from BACKING_OFF clears the retry; a job put back after release goes to the store", async (t) => {
  const { clock, store, feed, job } = setup();
  feed.pulse();
  const running = job();
  await store.answer([running], { drained: false });
  t.is(feed.take(), running);
  await store.fail();
  t.is(feed.mode, "BACKING_OFF");
  await feed.release();
  clock.advance(10_000);
  t.is(store.requests.length, 2);
  t.is(clock.pending, 0);
  feed.putBack(running);
  t.deepEqual(store.unlocked, [[running.id]]);
  t.is(feed.inFlight, 0);
});

test("putBack returns a handed-out job to the front of its line", async (t) => {
  const { store, feed, job } = setup({ limits: fixed(1, 4) });
  feed.pulse();
  const [first, second] = [job({ endpoint: "x", clientId: "c" }), job({ endpoint: "x", clientId: "c" })];
  await store.answer([first, second]);
  t.is(feed.take(), first);
  feed.putBack(first);
  t.is(feed.inFlight, 0, "its slot is free");
  t.is(feed.take(), first, "before the job behind it");
});

test("release waits for its hand-backs; a failed one is reported, not thrown", async (t) => {
  const { store, feed, events, jobs } = setup();
  feed.pulse();
  await store.answer(jobs(2));
  let fail = () => {};
  store.unlockResult = () => new Promise((_, reject) => (fail = () => reject(new Error("gone"))));
  let released = false;
  const releasing = feed.release().then(() => (released = true));
  await settle();
  t.false(released, "the hand-back is still being written");
  fail();
  await releasing;
  t.is(events.unlockErrors, 1, "the locks expire by themselves");
});

test("take() hands back a job whose lock is older than handoutMaxAgeMs; the store then holds it again, due", async (t) => {
  const { store, feed, job } = setup();
  feed.pulse();
  const stale = job({ ageMs: 2000 });
  const fresh = job({ ageMs: 1999 });
  await store.answer([stale, fresh]);
  t.is(feed.take(), fresh, "the stale one is skipped");
  t.deepEqual(store.unlocked, [[stale.id]]);
  t.is(feed.inFlight, 1);
  t.is(feed.mode, "IDLE");
  t.is(feed.take(), undefined);
  t.is(feed.mode, "FETCHING", "though the store was found drained a moment ago");
});

test("an unlock while a fetch is in flight keeps its drained answer from counting", async (t) => {
  const { store, feed, job } = setup();
  feed.pulse();
  const stale = job({ ageMs: 2000 });
  const fresh = job();
  await store.answer([stale, fresh]);
  feed.pulse();
  t.is(feed.take(), fresh, "the stale one is handed back while the fetch reads");
  await store.answer([]);
  t.is(feed.mode, "IDLE");
  feed.take();
  t.is(feed.mode, "FETCHING", "that answer was read before the hand-back");
});

test("the sweep hands back a waiting job whose lock grew stale; it is fetched again once its endpoint has room", async (t) => {
  const { clock, store, feed, job } = setup({ limits: fixed(1, 4) });
  feed.pulse();
  const [first, second] = [job({ endpoint: "slow", clientId: "c" }), job({ endpoint: "slow", clientId: "c" })];
  await store.answer([first, second]);
  t.is(feed.take(), first);
  t.is(feed.take(), undefined, "its endpoint's one slot is busy");
  t.is(store.requests.length, 1, "and the store was found drained");
  clock.advance(1999);
  t.deepEqual(store.unlocked, [], "still fresh");
  clock.advance(1);
  t.deepEqual(store.unlocked, [[second.id]], "handed back by the sweep, not left locked behind a hung endpoint");
  t.is(feed.waiting, 0);
  t.is(clock.pending, 0, "nothing waits: the sweep stops");
  feed.finish(first);
  t.is(feed.mode, "FETCHING", "its endpoint has room, and a job in the store");
});

test("a lock request carries the lanes' budgets; an endpoint or client with none is left behind until it has room", async (t) => {
  const { store, feed, job, takeAll } = setup({ limits: fixed(2, 3) });
  feed.pulse();
  const [hung1, hung2] = [job({ endpoint: "hung", clientId: "a" }), job({ endpoint: "hung", clientId: "a" })];
  const b1 = job({ endpoint: "b1", clientId: "b" });
  const b2 = [job({ endpoint: "b2", clientId: "b" }), job({ endpoint: "b2", clientId: "b" }), job({ endpoint: "b2", clientId: "b" })];
  await store.answer([hung1, hung2, b1, ...b2]);
  t.is(takeAll().length, 5);
  t.is(feed.waiting, 1, "b2's third job: b has its three in flight");
  feed.pulse();
  const request = store.requests[1] as LockRequest;
  t.is(request.limit, 7);
  t.deepEqual(Object.fromEntries(request.endpointBudgets), { hung: 0, b1: 1, b2: 0 }, "free slots, less what waits");
  t.deepEqual(Object.fromEntries(request.clientBudgets), { a: 1, b: 0 });
  t.is(request.defaultPerEndpoint, 2, "a stranger's: the floor");
  t.is(request.defaultPerClient, 3);
  feed.finish(hung1);
  await store.answer([]);
  t.is(feed.mode, "FETCHING", "hung, left out of that fetch, got room while it was read: fetched for at once");
  t.is(store.requests[2]?.endpointBudgets.get("hung"), 1);
  await store.answer([]);
  feed.finish(b1);
  t.is(feed.mode, "IDLE", "b1 was never left out, and b still has a job waiting here");
});

test("a finish fetches when its endpoint had due jobs passed over and has none waiting here", async (t) => {
  const { store, feed, job, takeAll } = setup({ limits: fixed(1, 4) });
  feed.pulse();
  const [x1, x2] = [job({ endpoint: "x", clientId: "c" }), job({ endpoint: "x", clientId: "c" })];
  const y = job({ endpoint: "y", clientId: "d" });
  await store.answer([x1, x2, y], { passedOver: { endpoints: ["x"] } });
  t.deepEqual(takeAll(), [x1, y]);
  feed.finish(y);
  t.is(feed.mode, "IDLE", "y left nothing behind");
  feed.finish(x1);
  t.is(feed.mode, "IDLE", "x still has a job waiting here");
  t.is(feed.take(), x2);
  feed.finish(x2);
  t.is(feed.mode, "FETCHING", "x has room, and due jobs in the store");
  t.is(store.requests.length, 2);
});

test("unservedMs counts from the first fetch wanted, through backing off, until one succeeds", async (t) => {
  const { clock, store, feed } = setup();
  t.is(feed.unservedMs(), 0);
  feed.pulse();
  clock.advance(30);
  t.is(feed.unservedMs(), 30, "a fetch under way");
  await store.fail();
  clock.advance(100);
  t.is(feed.mode, "FETCHING", "the retry");
  t.is(feed.unservedMs(), 130);
  await store.answer([]);
  t.is(feed.unservedMs(), 0, "served");
  feed.pulse();
  clock.advance(10);
  t.is(feed.unservedMs(), 10);
  const released = feed.release();
  t.is(feed.unservedMs(), 0, "released: nothing is wanted any more");
  await store.answer([]);
  await released;
});

test("new jobs go in locked only while the store was just found drained, within their budgets and the lanes' room", async (t) => {
  const { clock, store, feed, events, job, takeAll } = setup({ limits: fixed(2, 4) });
  const lanes = (count: number, endpoint: string) => Array.from({ length: count }, () => ({ endpoint, clientId: "c" }));
  t.deepEqual(feed.reserve(lanes(1, "a")), [false], "nothing known of the store yet");
  feed.pulse();
  await store.answer([]);
  t.deepEqual(feed.reserve(lanes(3, "a")), [true, true, false], "an endpoint's budget: its two free slots");
  t.deepEqual(
    feed.reserve([...lanes(1, "a"), ...lanes(2, "b"), { endpoint: "d", clientId: "other" }]),
    [true, true, false, true],
    "a client may hold a quarter of the batch waiting (two), across its endpoints; another client has its own",
  );
  const adopted = [job({ endpoint: "a", clientId: "c" }), job({ endpoint: "a", clientId: "c" })];
  const runnableBefore = events.runnable;
  feed.adopt(adopted);
  t.is(events.runnable, runnableBefore + 1, "adopted jobs are runnable at once");
  t.deepEqual(takeAll(), adopted, "handed out with no lock statement");
  t.is(store.requests.length, 1);
  clock.advance(250);
  t.deepEqual(feed.reserve(lanes(1, "e")), [false], "drained too long ago: it may hold due jobs now");
  feed.pulse();
  t.deepEqual(feed.reserve(lanes(1, "e")), [false], "a fetch under way: not known drained");
  await store.answer([]);
  await feed.release();
  t.deepEqual(feed.reserve(lanes(1, "e")), [false], "released");
  const late = job();
  feed.adopt([late]);
  t.deepEqual(store.unlocked.at(-1), [late.id], "a job adopted after release is unlocked");
});

test("a job saved to run later (dueAt) is fetched once it falls due, not when Agenda next asks; none after release", async (t) => {
  const { clock, store, feed } = setup();
  feed.pulse();
  await store.answer([]);
  // Two due times within one 20-ms step (setup's): the later one a multiple of it.
  const due = Math.ceil((clock.now() + 1_000) / 20) * 20;
  feed.dueAt(new Date(due - 10));
  feed.dueAt(new Date(due));
  clock.advance(due - 11 - clock.now());
  t.is(store.requests.length, 1, "not before it is due");
  clock.advance(11);
  t.is(store.requests.length, 2, "the two, due within one step, are fetched together as they fall due");
  await store.answer([]);
  clock.advance(5_000);
  t.is(store.requests.length, 2, "nothing more was due");
  feed.dueAt(new Date(clock.now() + 100));
  await feed.release();
  clock.advance(1_000);
  t.is(store.requests.length, 2, "a released feed fetches nothing");
});
