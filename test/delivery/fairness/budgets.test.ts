import test from "ava";
import {
  CompletionRate,
  LaneBudgets,
  LeftBehind,
  type LockRequest,
  scanWindow,
  withinBudgets,
} from "../../../src/delivery/fairness/budgets.js";
import { fixedConcurrency } from "../../../src/delivery/fairness/earned-concurrency.js";
import { FairLanes, type LaneJob } from "../../../src/delivery/fairness/fair-lanes.js";

test("completions count over the current and the previous second; keys with none are forgotten", (t) => {
  let now = 0;
  const rate = new CompletionRate(() => now);
  rate.record("a");
  rate.record("a");
  now = 900;
  rate.record("b");
  t.is(rate.recent("a"), 2);
  now = 1_500;
  rate.record("a");
  t.is(rate.recent("a"), 3, "the previous second still counts");
  now = 2_100;
  t.is(rate.recent("a"), 1, "the second before it no longer does");
  t.deepEqual([...rate.keys()], ["a"]);
  now = 10_000;
  t.is(rate.recent("a"), 0);
  t.deepEqual([...rate.keys()], [], "nothing lately: forgotten");
});

function budgetsOf(perEndpoint: number, perClient: number, maxWaiting: number) {
  let now = 0;
  const limits = { endpoint: fixedConcurrency(perEndpoint), client: fixedConcurrency(perClient) };
  const lanes = new FairLanes<LaneJob>(limits);
  const budgets = new LaneBudgets(lanes, limits, maxWaiting, () => now);
  return { lanes, budgets, tick: (ms: number) => (now += ms) };
}

test("an endpoint's budget is its free slots, less what already waits", (t) => {
  const { lanes, budgets } = budgetsOf(4, 100, 50);
  const job = { endpoint: "e", clientId: "c" };
  t.is(budgets.endpoint("e"), 4, "a stranger: its free slots");
  lanes.add({ ...job });
  lanes.add({ ...job });
  lanes.take();
  t.is(budgets.endpoint("e"), 2, "three free slots, one job waiting");
  lanes.take();
  t.is(budgets.endpoint("e"), 2, "both in flight: two free slots, nothing waiting");
});

test("a fast endpoint's budget is what it finished lately, capped by maxWaiting; a hung one's is none", (t) => {
  const { lanes, budgets } = budgetsOf(2, 100, 10);
  const fast = { endpoint: "fast", clientId: "c" };
  for (let i = 0; i < 30; i++) {
    lanes.add({ ...fast });
    const job = lanes.take() as LaneJob;
    lanes.finish(job);
    budgets.finished(job);
  }
  t.is(budgets.endpoint("fast"), 10, "thirty finished lately, at most maxWaiting");
  const hung = { endpoint: "hung", clientId: "d" };
  lanes.add({ ...hung });
  lanes.add({ ...hung });
  lanes.take();
  lanes.take();
  t.is(budgets.endpoint("hung"), 0, "every slot busy and nothing finished");
  const request = budgets.request(8);
  t.is(request.endpointBudgets.get("hung"), 0, "listed, so that the lock leaves it out");
  t.is(request.endpointBudgets.get("fast"), 10, "an endpoint that finished lately is listed though it holds nothing");
  t.is(request.limit, 8);
  t.is(request.defaultPerEndpoint, 2, "a stranger gets the floor");
});

test("a client's budget counts across its endpoints", (t) => {
  const { lanes, budgets } = budgetsOf(100, 3, 50);
  lanes.add({ endpoint: "e1", clientId: "c" });
  lanes.add({ endpoint: "e2", clientId: "c" });
  lanes.take();
  t.is(budgets.client("c"), 1, "three slots, one in flight, one waiting");
});

test("left behind: a finish brings a fetch once its endpoint or client has nothing waiting, and a full read resets the sets", (t) => {
  const left = new LeftBehind();
  left.add({ endpoints: ["e1"], clients: ["c1"] });
  const job = { endpoint: "e1", clientId: "c1" };
  t.false(left.roomFor(job, { endpoint: 2, client: 2 }), "it still has jobs waiting here");
  t.true(left.roomFor(job, { endpoint: 0, client: 2 }));
  t.false(left.roomFor(job, { endpoint: 0, client: 0 }), "once: it was forgotten");
  left.unlocked([{ endpoint: "e2", clientId: "c2" }]);
  t.deepEqual(left.size, { endpoints: 1, clients: 1 }, "a hand-back leaves its endpoint and client behind");
  t.true(left.roomFor({ endpoint: "e9", clientId: "c2" }, { endpoint: 0, client: 0 }), "by its client, whatever the endpoint");
  left.add({ endpoints: ["e2", "e3"], clients: ["c3"] });
  left.resetTo({ endpoints: ["e3"], clients: [] });
  t.deepEqual(left.size, { endpoints: 1, clients: 0 }, "only what the last full read left behind");
  t.false(left.roomFor({ endpoint: "e2", clientId: "c2" }, { endpoint: 0, client: 0 }));
});

function lockRequest(limit: number, endpointBudgets: Array<[string, number]>, clientBudgets: Array<[string, number]> = []): LockRequest {
  return {
    limit,
    endpointBudgets: new Map(endpointBudgets),
    clientBudgets: new Map(clientBudgets),
    defaultPerEndpoint: 2,
    defaultPerClient: 3,
  };
}

let nextRow = 0;
const rows = (clientId: string, endpoint: string, count: number) =>
  Array.from({ length: count }, () => ({ id: `r${nextRow++}`, clientId, endpoint }));
const endpointsOf = (chosen: LaneJob[]) => chosen.map((row) => row.endpoint);

test("withinBudgets: each endpoint gets at most its budget (a stranger the default), and the rest are passed over", (t) => {
  const candidates = [...rows("c", "listed", 3), ...rows("d", "stranger", 3), ...rows("e", "spent", 1)];
  const { chosen, passedOver } = withinBudgets(
    candidates,
    lockRequest(10, [
      ["listed", 1],
      ["spent", 0],
    ]),
  );
  t.deepEqual(endpointsOf(chosen), ["listed", "stranger", "stranger"]);
  t.deepEqual([...passedOver.endpoints].sort(), ["listed", "spent", "stranger"]);
  t.deepEqual(passedOver.clients, []);
});

test("withinBudgets: a client's budget counts across its endpoints; the limit bounds the whole", (t) => {
  const candidates = [...rows("c", "e1", 2), ...rows("c", "e2", 2), ...rows("d", "e3", 2)];
  const byClient = withinBudgets(candidates, lockRequest(10, [], [["c", 3]]));
  t.deepEqual(endpointsOf(byClient.chosen), ["e1", "e1", "e2", "e3", "e3"], "three of c's four");
  t.deepEqual(byClient.passedOver, { endpoints: [], clients: ["c"] });
  const limited = withinBudgets(candidates, lockRequest(3, [], [["c", 3]]));
  t.deepEqual(endpointsOf(limited.chosen), ["e1", "e1", "e2"], "oldest first, three in all");
  t.deepEqual(limited.passedOver, { endpoints: [], clients: ["c"] }, "c is over its budget among the candidates, limit or not");
});

test("scanWindow: a lock reads twice what the budgets let it take, not twice its room", (t) => {
  // One busy endpoint with 40 left, room for 500: 40 for it, 2 × 2 for endpoints not listed.
  t.is(scanWindow(lockRequest(500, [["a", 40]])), 2 * (40 + 4));
  t.is(
    scanWindow(
      lockRequest(500, [
        ["a", 40],
        ["b", 0],
      ]),
    ),
    2 * (40 + 4),
    "a spent budget adds nothing",
  );
});

test("scanWindow: the room still bounds it, and it never reads nothing", (t) => {
  t.is(scanWindow(lockRequest(10, [["a", 400]])), 20);
  t.is(scanWindow(lockRequest(0, [])), 2);
});
