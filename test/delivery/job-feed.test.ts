import test from "ava";
import { EarnedConcurrency, fixedConcurrency } from "../../src/delivery/earned-concurrency.js";
import { JobFeed, type JobFeedOptions } from "../../src/delivery/job-feed.js";
import type { FeedJob, JobSource, LockedBatch, LockRequest } from "../../src/delivery/job-source.js";
import { FakeClock } from "../helpers/fake-clock.js";

interface Job extends FeedJob {
  lockedAt: Date;
}

interface Row {
  id: string;
  endpoint: string;
  clientId: string;
  lockedAt?: Date;
}

/** A job table in memory: due rows in insertion order, locked as the real statement locks them. */
class FakeSource implements JobSource<Job> {
  rows: Row[] = [];
  requests: LockRequest[] = [];
  unlocked: string[][] = [];
  /** The next lockDue answers with this instead of reading rows. */
  fail: Error | undefined;
  /** While set, lockDue waits for this to be called. */
  #hold: (() => void) | undefined;
  #held: Promise<void> | undefined;
  #nextId = 0;

  constructor(private readonly clock: FakeClock) {}

  insert(clientId: string, endpoint: string, count = 1): void {
    for (let i = 0; i < count; i++) this.rows.push({ id: `job${this.#nextId++}`, clientId, endpoint: `${clientId} ${endpoint}` });
  }

  hold(): void {
    this.#held = new Promise((resolve) => {
      this.#hold = resolve;
    });
  }

  letGo(): void {
    this.#hold?.();
    this.#hold = undefined;
    this.#held = undefined;
  }

  async lockDue(request: LockRequest): Promise<LockedBatch<Job>> {
    this.requests.push(request);
    await this.#held;
    if (this.fail) {
      const error = this.fail;
      this.fail = undefined;
      throw error;
    }
    const perEndpoint = new Map<string, number>();
    const perClient = new Map<string, number>();
    const jobs: Job[] = [];
    const passedEndpoints = new Set<string>();
    // As the real statement: a window of twice the limit's due rows is read, leaving out those with no budget.
    const window = request.limit * 2;
    let scanned = 0;
    for (const row of this.rows) {
      if (row.lockedAt) continue;
      const endpointBudget = request.endpointBudgets.get(row.endpoint) ?? request.defaultPerEndpoint;
      const clientBudget = request.clientBudgets.get(row.clientId) ?? request.defaultPerClient;
      if (endpointBudget === 0 || clientBudget === 0) continue;
      if (++scanned > window) break;
      const endpointTaken = perEndpoint.get(row.endpoint) ?? 0;
      const clientTaken = perClient.get(row.clientId) ?? 0;
      if (endpointTaken >= endpointBudget || clientTaken >= clientBudget) {
        passedEndpoints.add(row.endpoint);
        continue;
      }
      if (jobs.length >= request.limit) continue;
      row.lockedAt = new Date(this.clock.now());
      perEndpoint.set(row.endpoint, endpointTaken + 1);
      perClient.set(row.clientId, clientTaken + 1);
      jobs.push({ id: row.id, endpoint: row.endpoint, clientId: row.clientId, lockedAt: row.lockedAt });
    }
    return { jobs, drained: scanned < window, passedOver: { endpoints: [...passedEndpoints], clients: [] } };
  }

  async unlock(jobs: readonly Job[]): Promise<void> {
    this.unlocked.push(jobs.map((job) => job.id));
    for (const job of jobs) {
      const row = this.rows.find((r) => r.id === job.id);
      if (row?.lockedAt?.getTime() === job.lockedAt.getTime()) delete row.lockedAt;
    }
  }

  /** Rows a finished job leaves behind: none. */
  done(job: Job): void {
    this.rows = this.rows.filter((row) => row.id !== job.id);
  }
}

const fixed = (perEndpoint: number, perClient: number) => ({
  endpoint: fixedConcurrency(perEndpoint),
  client: fixedConcurrency(perClient),
});

const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup(overrides: Partial<JobFeedOptions> = {}) {
  const clock = new FakeClock();
  const source = new FakeSource(clock);
  const events = { runnable: 0, fetched: [] as Array<{ ok: boolean }>, unlockErrors: 0 };
  const feed = new JobFeed<Job>(source, {
    batchSize: 8,
    limits: fixed(2, 4),
    handoutMaxAgeMs: 2000,
    drainedForMs: 250,
    fetchSpacingMs: 20,
    backoff: { initialMs: 100, maxMs: 800 },
    due: { stepMs: 20, maxPending: 100 },
    clock,
    onRunnable: () => events.runnable++,
    onFetched: (outcome) => events.fetched.push({ ok: outcome.ok }),
    onUnlockError: () => events.unlockErrors++,
    ...overrides,
  });
  const takeAll = () => {
    const taken: Job[] = [];
    for (let job = feed.take(); job; job = feed.take()) taken.push(job);
    return taken;
  };
  return { clock, source, feed, events, takeAll };
}

test("IDLE: asking with nothing runnable fetches; the fetched jobs are runnable and handed out", async (t) => {
  const { source, feed, events, takeAll } = setup();
  source.insert("a", "x", 2);
  t.is(feed.mode, "IDLE");
  t.is(feed.take(), undefined);
  t.is(feed.mode, "FETCHING");
  await settle();
  t.is(feed.mode, "IDLE");
  t.deepEqual(events.fetched, [{ ok: true }]);
  t.is(events.runnable, 1);
  t.deepEqual(
    takeAll().map((j) => j.id),
    ["job0", "job1"],
  );
  t.is(feed.inFlight, 2);
});

test("FETCHING: requests meanwhile are remembered and fetched right after, so nothing committed before them is missed", async (t) => {
  const { source, feed } = setup();
  source.hold();
  feed.pulse();
  t.is(feed.mode, "FETCHING");
  source.insert("a", "x");
  feed.pulse();
  feed.pulse();
  t.is(source.requests.length, 1, "one fetch at a time");
  source.letGo();
  await settle();
  await settle();
  t.is(source.requests.length, 2, "exactly one more for the pulses during the first");
  t.is(feed.waiting, 1);
});

test("a fetch that found the source drained vouches for it for drainedForMs, unless something is announced", async (t) => {
  const { clock, source, feed } = setup();
  feed.take();
  await settle();
  t.is(source.requests.length, 1);
  t.is(feed.take(), undefined);
  t.is(feed.mode, "IDLE", "drained moments ago: no fetch");
  t.deepEqual(feed.reserve([{ endpoint: "a x", clientId: "a" }]), [true]);
  clock.advance(250);
  t.deepEqual(feed.reserve([{ endpoint: "a x", clientId: "a" }]), [false], "the vouching is over");
  feed.take();
  t.is(feed.mode, "FETCHING");
  await settle();
  feed.pulse();
  t.is(source.requests.length, 3, "a pulse fetches even right after a drained fetch");
  await settle();
  // A pulse during a fetch means that fetch can't vouch for the source.
  source.hold();
  feed.pulse();
  feed.pulse();
  source.letGo();
  source.hold(); // the fetch the second pulse asked for waits
  await settle();
  t.is(feed.mode, "FETCHING");
  t.deepEqual(feed.reserve([{ endpoint: "a x", clientId: "a" }]), [false]);
  source.letGo();
});

test("untilVouched: from IDLE it fetches; new jobs wait for the answer, after which they go in locked", async (t) => {
  const { clock, source, feed } = setup();
  const x = { endpoint: "a x", clientId: "a" };
  source.hold();
  const waits = [feed.untilVouched(25), feed.untilVouched(25)];
  t.is(feed.mode, "FETCHING");
  t.is(source.requests.length, 1);
  t.truthy(waits[0]);
  t.is(waits[0], waits[1], "every waiter waits for the same answer");
  t.deepEqual(feed.reserve([x]), [false], "nothing vouches while it is in flight");
  t.is(feed.take(), undefined);
  let over = false;
  void Promise.all(waits).then(() => {
    over = true;
  });
  await settle();
  t.false(over, "not before the answer");
  source.letGo();
  await Promise.all(waits);
  t.deepEqual(feed.reserve([x]), [true], "its answer vouches: in locked");
  t.is(source.requests.length, 1, "take() finding nothing during the fetch asked for no other");
  t.is(clock.pending, 0, "the wait's timer is gone");
  t.is(feed.untilVouched(25), undefined, "vouched: nothing to wait for");
});

test("untilVouched: no wait when the fetch in flight cannot vouch; a wait ends after maxWaitMs, or at release", async (t) => {
  const { clock, source, feed } = setup();
  source.hold();
  feed.take();
  feed.pulse();
  t.is(feed.untilVouched(25), undefined, "asked again while in flight: its answer vouches for nothing");
  source.letGo();
  await settle();
  await settle();
  source.hold();
  clock.advance(250);
  const slow = feed.untilVouched(25);
  t.is(feed.mode, "FETCHING");
  let over = false;
  void slow?.then(() => {
    over = true;
  });
  clock.advance(24);
  await settle();
  t.false(over);
  clock.advance(1);
  await settle();
  t.true(over, "after maxWaitMs, though the fetch has not answered");
  const atRelease = feed.untilVouched(25);
  t.truthy(atRelease, "a new wait for the same fetch");
  let releasedOver = false;
  void atRelease?.then(() => {
    releasedOver = true;
  });
  const released = feed.release();
  await settle();
  t.true(releasedOver, "release ends it");
  source.letGo();
  await released;
  t.is(feed.mode, "RELEASED");
});

test("untilVouched: a wait ends as soon as the fetch's answer can no longer vouch (a request, a hand-back)", async (t) => {
  const { clock, source, feed } = setup({ handoutMaxAgeMs: 100 });
  source.hold();
  const announced = feed.untilVouched(25);
  let over = false;
  void announced?.then(() => {
    over = true;
  });
  feed.pulse();
  await settle();
  t.true(over, "a pulse during the fetch: no use waiting for its answer");
  source.letGo();
  await settle();
  await settle();
  await settle();

  // A job whose lock grew too old is handed back by take() during a fetch: it is asked for again.
  source.hold();
  clock.advance(250);
  const handedBack = feed.untilVouched(25);
  const requests = source.requests.length;
  feed.adopt([{ id: "old", endpoint: "a x", clientId: "a", lockedAt: new Date(clock.now() - 100) }]);
  let handedBackOver = false;
  void handedBack?.then(() => {
    handedBackOver = true;
  });
  t.is(feed.take(), undefined, "stale: handed back, not out");
  await settle();
  t.true(handedBackOver);
  source.letGo();
  await settle();
  await settle();
  t.true(source.requests.length > requests, "and fetched again");
});

test("dueAt for a time already past (a requeue) counts from now: a fetch sent before the call does not stand for it", async (t) => {
  const { clock, source, feed } = setup();
  feed.take();
  await settle();
  const before = source.requests.length;
  feed.dueAt(new Date(clock.now() - 1_000));
  clock.advance(20);
  await settle();
  t.is(source.requests.length, before + 1, "fetched once due");
});

test("a retry scheduled with dueAt is fetched once it falls due, not at the next poll; none after release", async (t) => {
  const { clock, source, feed, takeAll } = setup();
  feed.take();
  await settle();
  t.is(source.requests.length, 1);
  feed.dueAt(new Date(clock.now() + 1_000));
  clock.advance(999);
  t.is(feed.mode, "IDLE", "not due yet: no fetch");
  source.insert("a", "x");
  clock.advance(1);
  t.is(feed.mode, "FETCHING", "fell due: fetched");
  await settle();
  t.is(takeAll().length, 1);
  // A fetch sent once a retry fell due reads it: the alarm asks for no other.
  const fetches = source.requests.length;
  feed.dueAt(new Date(clock.now() + 100));
  clock.advance(100);
  t.is(feed.mode, "FETCHING");
  feed.dueAt(new Date(clock.now()));
  clock.advance(0);
  await settle();
  t.is(source.requests.length, fetches + 1, "one fetch, not a second for the retry due as it went out");
  t.is(feed.mode, "IDLE");
  feed.dueAt(new Date(clock.now() + 1_000));
  await feed.release();
  t.is(clock.pending, 0, "released: its alarm is cleared");
});

test("reserve takes new jobs locked only within each endpoint's, client's and the batch's room", async (t) => {
  const { feed } = setup({ batchSize: 16, limits: fixed(2, 3) });
  feed.take();
  await settle();
  const x = { endpoint: "a x", clientId: "a" };
  const y = { endpoint: "a y", clientId: "a" };
  const z = { endpoint: "b z", clientId: "b" };
  t.deepEqual(feed.reserve([x, x, x, y, y, z, z, z]), [true, true, false, true, false, true, true, false]);
});

test("the batch's room, and a quarter of it for any one endpoint or client, bound reserve too", async (t) => {
  const { feed } = setup({ batchSize: 8, limits: fixed(4, 4) });
  feed.take();
  await settle();
  const strangers = Array.from({ length: 10 }, (_, i) => ({ endpoint: `c${i} e`, clientId: `c${i}` }));
  t.deepEqual(
    feed.reserve(strangers),
    strangers.map((_, i) => i < 8),
    "eight of room",
  );
  const one = { endpoint: "a x", clientId: "a" };
  t.deepEqual(feed.reserve([one, one, one]), [true, true, false], "at most 8 / 4 waiting for one endpoint, whatever its cap");
});

test("adopt makes jobs inserted locked runnable at once; after release they go straight back", async (t) => {
  const { clock, source, feed, events } = setup();
  const job = { id: "new", endpoint: "a x", clientId: "a", lockedAt: new Date(clock.now()) };
  feed.adopt([job]);
  t.is(events.runnable, 1);
  t.is(feed.take(), job);
  await feed.release();
  const late = { id: "late", endpoint: "a x", clientId: "a", lockedAt: new Date(clock.now()) };
  feed.adopt([late]);
  t.deepEqual(source.unlocked, [["late"]]);
  t.is(feed.take(), undefined);
});

test("BACKING_OFF: a failed fetch waits, doubling up to the cap, and one success resets it", async (t) => {
  const { clock, source, feed, events } = setup();
  source.fail = new Error("connection terminated");
  feed.pulse();
  await settle();
  t.is(feed.mode, "BACKING_OFF");
  t.deepEqual(events.fetched, [{ ok: false }]);
  feed.pulse();
  feed.take();
  t.is(source.requests.length, 1, "requests wait out the backoff");
  source.fail = new Error("still down");
  clock.advance(99);
  t.is(source.requests.length, 1);
  clock.advance(1);
  t.is(source.requests.length, 2, "retried after 100 ms");
  await settle();
  t.is(feed.mode, "BACKING_OFF");
  clock.advance(199);
  t.is(source.requests.length, 2);
  clock.advance(1);
  t.is(source.requests.length, 3, "then after 200 ms");
  await settle();
  t.is(feed.mode, "IDLE");
  t.deepEqual(
    events.fetched.map((f) => f.ok),
    [false, false, true],
  );
  source.fail = new Error("down again");
  feed.pulse();
  await settle();
  clock.advance(100);
  t.is(source.requests.length, 5, "a success resets the delay to 100 ms");
  for (let i = 0; i < 6; i++) {
    source.fail = new Error("down");
    await settle();
    clock.advance(800);
  }
  t.true(source.requests.length <= 12, "never faster than the 800 ms cap");
});

test("a hung endpoint gets no more than its slots; the others' jobs are fetched past its backlog", async (t) => {
  const { clock, source, feed, takeAll } = setup({ batchSize: 8, limits: fixed(2, 4) });
  source.insert("hung", "h", 100);
  feed.take();
  await settle();
  const hung = takeAll();
  t.is(hung.length, 2, "its two slots");
  t.is(feed.waiting, 0, "nothing more of it was locked: its budget was its free slots");
  source.insert("ok", "o");
  clock.advance(300);
  feed.pulse();
  await settle();
  const request = source.requests.at(-1) as LockRequest;
  t.is(request.endpointBudgets.get("hung h"), 0, "all its slots busy and nothing finished: none of its jobs");
  t.deepEqual(
    takeAll().map((j) => j.clientId),
    ["ok"],
  );
});

test("a fast endpoint's budget grows with what it finished lately, so it is fetched in whole batches", async (t) => {
  const { clock, source, feed, takeAll } = setup({ batchSize: 64, limits: fixed(2, 100) });
  source.insert("a", "fast", 200);
  feed.take();
  await settle();
  for (let round = 0; round < 10; round++) {
    // It answers at once: every job it has runs and finishes, two at a time.
    for (let running = takeAll(); running.length > 0; running = takeAll()) {
      for (const job of running) {
        feed.finish(job);
        source.done(job);
      }
    }
    // A fetch per spacing while the backlog is read.
    clock.advance(20);
    await settle();
  }
  const budgets = source.requests.map((r) => r.endpointBudgets.get("a fast") ?? r.defaultPerEndpoint);
  t.is(budgets[0], 2, "a stranger gets its free slots");
  // Twenty finished within the second: it may hold about that many, ten times its two slots.
  t.true(Math.max(...budgets) >= 10, `then about what it finishes per second (budgets ${budgets.join(",")})`);
});

test("a waiting job whose lock grew stale goes back to the source, and is fetched again once its endpoint has room", async (t) => {
  const { clock, source, feed, takeAll } = setup({ batchSize: 8, limits: fixed(1, 4) });
  source.insert("a", "slow", 1);
  feed.take();
  await settle();
  const [first] = takeAll();
  // Another job of the busy endpoint arrives locked (e.g. inserted locked by a publish).
  feed.adopt([{ id: "extra", endpoint: "a slow", clientId: "a", lockedAt: new Date(clock.now()) }]);
  source.rows.push({ id: "extra", endpoint: "a slow", clientId: "a", lockedAt: new Date(clock.now()) });
  t.is(feed.take(), undefined, "its endpoint is at its cap");
  clock.advance(2000);
  t.deepEqual(source.unlocked.at(-1), ["extra"], "handed back by the sweep");
  t.is(feed.waiting, 0);
  const before = source.requests.length;
  feed.finish(first as Job);
  source.done(first as Job);
  t.is(source.requests.length, before + 1, "its slot is free and its backlog is in the source: fetch");
  await settle();
  t.is(feed.take()?.id, "extra");
});

test("take never hands out a stale lock", async (t) => {
  const { clock, source, feed } = setup();
  feed.adopt([{ id: "old", endpoint: "a x", clientId: "a", lockedAt: new Date(clock.now() - 5000) }]);
  t.is(feed.take(), undefined);
  t.deepEqual(source.unlocked, [["old"]]);
  t.is(feed.inFlight, 0);
});

test("a full window leaves more due: the feed fetches again at once, and when the lanes run low", async (t) => {
  const { source, feed, takeAll } = setup({ batchSize: 4, limits: fixed(100, 100) });
  source.insert("a", "x", 20);
  feed.take();
  await settle();
  t.is(source.requests.length, 1);
  t.is(feed.waiting, 4, "a whole batch: no room to fetch more yet");
  const taken = takeAll();
  t.is(taken.length, 4);
  t.is(source.requests.length, 2, "the lanes ran low with more due");
});

test("RELEASED: waiting jobs and those of a fetch in flight go back; nothing more is fetched or handed out", async (t) => {
  const { clock, source, feed } = setup();
  source.insert("a", "x", 2);
  feed.take();
  await settle();
  source.insert("b", "y", 1);
  source.hold();
  feed.pulse();
  const released = feed.release();
  t.is(feed.mode, "RELEASED");
  source.letGo();
  await released;
  t.deepEqual(source.unlocked.flat().sort(), ["job0", "job1", "job2"]);
  t.is(feed.take(), undefined);
  feed.pulse();
  clock.advance(10_000);
  t.is(source.requests.length, 2, "no fetch after release");
  t.is(clock.pending, 0, "no timer left behind");
});

test("RELEASED from BACKING_OFF clears the retry timer", async (t) => {
  const { clock, source, feed } = setup();
  source.fail = new Error("down");
  feed.pulse();
  await settle();
  t.is(feed.mode, "BACKING_OFF");
  await feed.release();
  clock.advance(10_000);
  t.is(source.requests.length, 1);
  t.is(clock.pending, 0);
});

test("putBack returns a handed-out job to its line, or to the source once released", async (t) => {
  const { clock, source, feed } = setup();
  const job = { id: "j", endpoint: "a x", clientId: "a", lockedAt: new Date(clock.now()) };
  feed.adopt([job]);
  t.is(feed.take(), job);
  feed.putBack(job);
  t.is(feed.inFlight, 0);
  t.is(feed.take(), job);
  await feed.release();
  feed.putBack(job);
  t.deepEqual(source.unlocked.at(-1), ["j"]);
});

test("WAITING_FOR_ROOM: a request made while the lanes are full is remembered and made once they run low", async (t) => {
  const { clock, source, feed } = setup({ batchSize: 4, limits: fixed(100, 100) });
  const now = () => new Date(clock.now());
  feed.adopt(["a", "b", "c", "d"].map((id) => ({ id, endpoint: `${id} e`, clientId: id, lockedAt: now() })));
  feed.pulse();
  t.is(feed.mode, "WAITING_FOR_ROOM", "full: no fetch now");
  t.is(source.requests.length, 0);
  const first = feed.take() as Job;
  t.is(source.requests.length, 0, "three still waiting: more than half the batch");
  feed.take();
  feed.take();
  t.is(source.requests.length, 1, "below half: the remembered request is made");
  t.truthy(first);
});

test("BACKING_OFF: when the lanes filled up meanwhile, the timer waits for room instead of fetching with none", async (t) => {
  const { clock, source, feed } = setup({ batchSize: 2, limits: fixed(100, 100) });
  source.fail = new Error("down");
  feed.pulse();
  await settle();
  t.is(feed.mode, "BACKING_OFF");
  feed.adopt(["a", "b"].map((id) => ({ id, endpoint: `${id} e`, clientId: id, lockedAt: new Date(clock.now()) })));
  clock.advance(100);
  t.is(feed.mode, "WAITING_FOR_ROOM");
  t.is(source.requests.length, 1, "no fetch with no room (its limit would be 0)");
  feed.take();
  feed.take();
  t.is(source.requests.length, 2, "fetched once they ran low");
});

test("release waits for the locks it hands back", async (t) => {
  const { clock, source, feed } = setup();
  feed.adopt([{ id: "w", endpoint: "a x", clientId: "a", lockedAt: new Date(clock.now()) }]);
  let unlocked = false;
  source.unlock = async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    unlocked = true;
  };
  await feed.release();
  t.true(unlocked, "release resolved only once the hand-back was written");
});

test("jobs a budget passed over are fetched again as soon as their endpoint finishes a job", async (t) => {
  const { source, feed, takeAll } = setup({ batchSize: 8, limits: fixed(2, 100) });
  source.insert("a", "x", 5);
  feed.take();
  await settle();
  const running = takeAll();
  t.is(running.length, 2);
  t.is(feed.waiting, 0, "a stranger's budget: its two free slots");
  const before = source.requests.length;
  feed.finish(running[0] as Job);
  source.done(running[0] as Job);
  t.is(source.requests.length, before + 1, "it left due jobs behind: fetch");
  await settle();
  t.is(takeAll().length, 1, "one slot free, one more of its jobs");
});

test("unservedMs counts from the first fetch wanted until one succeeds", async (t) => {
  const { clock, source, feed } = setup();
  t.is(feed.unservedMs(), 0);
  source.fail = new Error("down");
  feed.pulse();
  await settle();
  clock.advance(50);
  t.is(feed.mode, "BACKING_OFF");
  t.is(feed.unservedMs(), 50);
  clock.advance(50);
  t.is(feed.unservedMs(), 100, "the retry is under way");
  await settle();
  t.is(feed.mode, "IDLE");
  t.is(feed.unservedMs(), 0, "it succeeded");
});

/** A backlog being read while one job waits for a slot: the feed is SPACING its fetches. */
async function spacing() {
  const setUp = setup({ batchSize: 8, limits: fixed(2, 100) });
  const { clock, source, feed, takeAll } = setUp;
  const lockedAt = new Date(clock.now());
  // Three jobs of one endpoint, two slots: one of them waits.
  feed.adopt(["z1", "z2", "z3"].map((id) => ({ id, endpoint: "c z", clientId: "c", lockedAt })));
  takeAll();
  source.insert("a", "x", 100);
  await settle();
  return setUp;
}

test("SPACING: while a backlog is read and jobs wait, fetches go out at most one per fetchSpacingMs", async (t) => {
  const { clock, source, feed, takeAll } = await spacing();
  const requests = () => source.requests.length;
  t.is(requests(), 1, "nothing runnable: fetched");
  t.is(feed.mode, "SPACING", "a full window came back, and a job waits: the next fetch waits its turn");
  const running = takeAll();
  t.is(running.length, 2);
  for (const job of running) feed.finish(job);
  t.is(requests(), 1, "finishes meanwhile make no fetch of their own");
  clock.advance(20);
  t.is(requests(), 2, "one fetch once the spacing is over");
});

test("SPACING: with nothing left waiting, a fetch goes out at once", async (t) => {
  const { source, feed, takeAll } = setup({ batchSize: 8, limits: fixed(100, 100) });
  source.insert("a", "x", 100);
  feed.take();
  await settle();
  t.is(feed.mode, "WAITING_FOR_ROOM", "a whole batch came back");
  t.is(takeAll().length, 8);
  t.is(feed.mode, "FETCHING", "the lanes ran dry: no spacing");
});

test("SPACING: a source read to the end is fetched from at once (new jobs are not a backlog)", async (t) => {
  const { clock, source, feed } = setup({ batchSize: 8, limits: fixed(100, 100) });
  feed.adopt([{ id: "w", endpoint: "c z", clientId: "c", lockedAt: new Date(clock.now()) }]);
  source.insert("a", "x", 2);
  feed.pulse();
  await settle();
  t.is(feed.mode, "IDLE");
  t.is(feed.waiting, 3);
  source.insert("b", "y", 1);
  feed.pulse();
  t.is(feed.mode, "FETCHING", "jobs wait, but the last fetch read the source to the end");
  await settle();
  t.is(feed.waiting, 4);
});

test("RELEASED from SPACING clears the timer", async (t) => {
  const { clock, source, feed } = await spacing();
  t.is(feed.mode, "SPACING");
  await feed.release();
  clock.advance(1000);
  t.is(source.requests.length, 1);
  t.is(clock.pending, 0);
});

test("a run that made no request frees its slot and teaches its endpoint's limit nothing", async (t) => {
  const clock = new FakeClock();
  const limits = {
    endpoint: new EarnedConcurrency({ floor: 1, ceiling: 10, slowMs: 1000, now: () => clock.now() }),
    client: fixedConcurrency(100),
  };
  const { feed } = setup({ limits, clock });
  const lockedAt = new Date(clock.now());
  feed.adopt(["j1", "j2", "j3"].map((id) => ({ id, endpoint: "a x", clientId: "a", lockedAt })));
  const first = feed.take() as Job;
  feed.finish(first, false);
  t.is(limits.endpoint.limit("a x"), 1, "no request answered: still at the floor");
  const second = feed.take() as Job;
  t.truthy(second, "its slot is free");
  feed.finish(second);
  t.is(limits.endpoint.limit("a x"), 2, "an answer, fast, with more waiting: one more");
});

test("a hand-back while a fetch is in flight keeps that fetch from vouching for the source", async (t) => {
  const { clock, source, feed } = setup();
  // Waiting, never taken: its lock grows stale.
  feed.adopt([{ id: "w", endpoint: "a x", clientId: "a", lockedAt: new Date(clock.now()) }]);
  source.hold();
  feed.pulse();
  clock.advance(2500);
  t.deepEqual(source.unlocked, [["w"]], "its lock grew stale while the fetch was reading: handed back");
  source.letGo();
  await settle();
  await settle();
  t.is(feed.mode, "IDLE");
  t.false(feed.reserve([{ endpoint: "b y", clientId: "b" }])[0], "that fetch read the source before the hand-back");
  feed.pulse();
  await settle();
  t.true(feed.reserve([{ endpoint: "b y", clientId: "b" }])[0], "the next one vouches again");
});
