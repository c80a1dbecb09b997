import test from "ava";
import { CompletionRate } from "../../src/delivery/completion-rate.js";
import { fixedConcurrency } from "../../src/delivery/earned-concurrency.js";
import { FairLanes, type LaneJob } from "../../src/delivery/fair-lanes.js";
import { LaneBudgets } from "../../src/delivery/lane-budgets.js";
import { LeftBehind } from "../../src/delivery/left-behind.js";

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
  t.deepEqual(budgets.all().endpoints.get("hung"), 0, "listed, so that the fetch leaves it out");
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
  left.add("e1", "c1");
  const job = { endpoint: "e1", clientId: "c1" };
  t.false(left.roomFor(job, { endpoint: 2, client: 2 }), "it still has jobs waiting here");
  t.true(left.roomFor(job, { endpoint: 0, client: 2 }));
  t.false(left.roomFor(job, { endpoint: 0, client: 0 }), "once: it was forgotten");
  left.add("e2");
  left.add("e3", "c3");
  left.resetTo({ endpoints: ["e3"], clients: [] });
  t.deepEqual(left.size, { endpoints: 1, clients: 0 }, "only what the last full read left behind");
  t.false(left.roomFor({ endpoint: "e2", clientId: "c2" }, { endpoint: 0, client: 0 }));
});
