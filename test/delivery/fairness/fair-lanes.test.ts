import test from "ava";
import { fixedConcurrency } from "../../../src/delivery/fairness/earned-concurrency.js";
import { FairLanes, type LaneJob } from "../../../src/delivery/fairness/fair-lanes.js";

interface Job extends LaneJob {
  id: string;
}

const fixed = (perEndpoint: number, perClient: number) => ({
  endpoint: fixedConcurrency(perEndpoint),
  client: fixedConcurrency(perClient),
});

let next = 0;
const job = (clientId: string, endpoint: string): Job => ({ id: `j${next++}`, clientId, endpoint: `${clientId} ${endpoint}` });
const takeAll = (lanes: FairLanes<Job>) => {
  const taken: Job[] = [];
  for (let taking = lanes.take(); taking; taking = lanes.take()) taken.push(taking);
  return taken;
};

test("hands out in turn by client, then by each client's endpoints", (t) => {
  const lanes = new FairLanes<Job>(fixed(10, 10));
  for (let i = 0; i < 3; i++) lanes.add(job("a", "x"));
  for (let i = 0; i < 3; i++) lanes.add(job("a", "y"));
  for (let i = 0; i < 3; i++) lanes.add(job("b", "z"));
  const order = takeAll(lanes).map((j) => j.endpoint);
  t.deepEqual(order, ["a x", "b z", "a y", "b z", "a x", "b z", "a y", "a x", "a y"]);
  t.is(lanes.inFlight, 9);
  t.is(lanes.waiting, 0);
});

test("an endpoint at its cap holds only its own slots; the others' jobs flow past its backlog", (t) => {
  const lanes = new FairLanes<Job>(fixed(4, 100));
  for (let i = 0; i < 1000; i++) lanes.add(job("hung", "h"));
  const hung = takeAll(lanes);
  t.is(hung.length, 4, "the hung endpoint got its cap and no more");
  t.false(lanes.runnable);
  const healthy = job("healthy", "ok");
  lanes.add(healthy);
  t.is(lanes.take(), healthy);
  t.is(lanes.waiting, 996);
  // One hung request ends (its timeout): exactly one more of its jobs may start.
  lanes.finish(hung[0] as Job);
  t.is(lanes.take()?.clientId, "hung");
  t.is(lanes.take(), undefined);
});

test("a client at its cap waits across all its endpoints, others go on", (t) => {
  const lanes = new FairLanes<Job>(fixed(10, 3));
  for (const endpoint of ["p", "q", "r", "s"]) for (let i = 0; i < 5; i++) lanes.add(job("greedy", endpoint));
  lanes.add(job("other", "o"));
  const taken = takeAll(lanes);
  t.is(taken.filter((j) => j.clientId === "greedy").length, 3);
  t.is(taken.filter((j) => j.clientId === "other").length, 1);
  lanes.finish(taken.find((j) => j.clientId === "greedy") as Job);
  t.is(lanes.take()?.clientId, "greedy", "a freed client slot lets it go again, on any of its endpoints");
  t.is(lanes.take(), undefined);
});

test("endpoints and clients report what they hold", (t) => {
  const lanes = new FairLanes<Job>(fixed(2, 3));
  lanes.add(job("a", "x"));
  lanes.add(job("a", "x"));
  lanes.add(job("a", "y"));
  lanes.take();
  t.deepEqual(
    [...lanes.endpoints()],
    [
      { endpoint: "a x", clientId: "a", waiting: 1, inFlight: 1 },
      { endpoint: "a y", clientId: "a", waiting: 1, inFlight: 0 },
    ],
  );
  t.deepEqual([...lanes.clients()], [{ clientId: "a", waiting: 2, inFlight: 1 }]);
  t.is(lanes.inFlightTo("a x"), 1);
  t.is(lanes.waitingFor("a y"), 1);
  t.is(lanes.inFlightFor("a"), 1);
  t.is(lanes.waitingForClient("a"), 2);
  t.is(lanes.inFlightTo("b z"), 0);
});

test("putBack returns a job to the front of its line and frees its slot", (t) => {
  const lanes = new FairLanes<Job>(fixed(1, 1));
  const first = job("a", "x");
  const second = job("a", "x");
  lanes.add(first);
  lanes.add(second);
  t.is(lanes.take(), first);
  t.is(lanes.take(), undefined);
  lanes.putBack(first);
  t.is(lanes.inFlight, 0);
  t.is(lanes.take(), first, "first in line again");
});

test("remove takes out matching waiting jobs only; finish of a job not in flight is a bug", (t) => {
  const lanes = new FairLanes<Job>(fixed(5, 5));
  const jobs = [job("a", "x"), job("a", "x"), job("b", "y")];
  for (const j of jobs) lanes.add(j);
  const running = lanes.take() as Job;
  const removed = lanes.remove((j) => j.endpoint === "a x");
  t.deepEqual(
    removed.map((j) => j.id),
    jobs.filter((j) => j.endpoint === "a x" && j !== running).map((j) => j.id),
  );
  t.is(lanes.waiting, 1);
  t.is(lanes.take()?.clientId, "b");
  lanes.finish(running);
  t.throws(() => lanes.finish(running), { message: /not in flight cannot finish/ });
});

test("random operations keep every cap and lose or repeat no job", (t) => {
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const limits = { perEndpoint: 3, perClient: 5 };
  const lanes = new FairLanes<Job>(fixed(limits.perEndpoint, limits.perClient));
  const waiting = new Map<string, Job>();
  const running: Job[] = [];
  const handedOut = new Set<string>();
  for (let step = 0; step < 20_000; step++) {
    const roll = random();
    if (roll < 0.45) {
      const j = job(`c${Math.floor(random() * 4)}`, `e${Math.floor(random() * 3)}`);
      lanes.add(j);
      waiting.set(j.id, j);
    } else if (roll < 0.8) {
      const j = lanes.take();
      if (j) {
        t.true(waiting.delete(j.id), "only a waiting job is handed out");
        t.false(handedOut.has(j.id), "never twice");
        handedOut.add(j.id);
        running.push(j);
      } else {
        // Nothing handed out: every waiting job's endpoint or client is at its cap.
        const busy = (key: (j: Job) => string, value: string) => running.filter((r) => key(r) === value).length;
        for (const w of waiting.values()) {
          const blocked =
            busy((r) => r.endpoint, w.endpoint) >= limits.perEndpoint || busy((r) => r.clientId, w.clientId) >= limits.perClient;
          if (!blocked) return t.fail(`step ${step}: job ${w.id} could run but nothing was handed out`);
        }
      }
    } else if (running.length > 0) {
      const [j] = running.splice(Math.floor(random() * running.length), 1);
      if (roll < 0.95) lanes.finish(j as Job);
      else {
        lanes.putBack(j as Job);
        handedOut.delete((j as Job).id);
        waiting.set((j as Job).id, j as Job);
      }
    }
    const perEndpoint = new Map<string, number>();
    const perClient = new Map<string, number>();
    for (const j of running) {
      perEndpoint.set(j.endpoint, (perEndpoint.get(j.endpoint) ?? 0) + 1);
      perClient.set(j.clientId, (perClient.get(j.clientId) ?? 0) + 1);
    }
    if ([...perEndpoint.values()].some((n) => n > limits.perEndpoint)) return t.fail(`endpoint cap broken at step ${step}`);
    if ([...perClient.values()].some((n) => n > limits.perClient)) return t.fail(`client cap broken at step ${step}`);
    if (lanes.waiting !== waiting.size || lanes.inFlight !== running.length) return t.fail(`counts drifted at step ${step}`);
  }
  // With every request finished, all that waits is handed out.
  for (const j of running.splice(0)) lanes.finish(j);
  let drained = 0;
  for (let j = lanes.take(); j; j = lanes.take()) {
    drained++;
    lanes.finish(j);
  }
  t.is(drained, waiting.size);
  t.is(lanes.waiting, 0);
});

test("occupancy: requests in flight, jobs waiting, endpoints with a request in flight and those at their cap", (t) => {
  const lanes = new FairLanes<Job>(fixed(2, 100));
  t.deepEqual(lanes.occupancy(), { inFlight: 0, waiting: 0, endpointsInFlight: 0, endpointsAtLimit: 0 });
  for (let i = 0; i < 3; i++) lanes.add(job("a", "full"));
  lanes.add(job("a", "one"));
  lanes.add(job("b", "idle"));
  const taken = [lanes.take(), lanes.take(), lanes.take()] as Job[];
  // "a full" holds both its slots, "a one" and "b idle" one each of theirs: b's job went out in its turn.
  t.deepEqual(lanes.occupancy(), { inFlight: 3, waiting: 2, endpointsInFlight: 3, endpointsAtLimit: 0 });
  takeAll(lanes);
  t.deepEqual(lanes.occupancy(), { inFlight: 4, waiting: 1, endpointsInFlight: 3, endpointsAtLimit: 1 });
  for (const done of taken) lanes.finish(done);
  t.like(lanes.occupancy(), { inFlight: 1 });
});
