import test from "ava";
import { type LockRequest, scanWindow } from "../../src/delivery/job-source.js";

function request(limit: number, endpointBudgets: Array<[string, number]>): LockRequest {
  return { limit, endpointBudgets: new Map(endpointBudgets), clientBudgets: new Map(), defaultPerEndpoint: 16, defaultPerClient: 128 };
}

test("a lock reads twice what the budgets let it take, not twice its room", (t) => {
  // One busy endpoint with 40 left, and room for 500: 40 for it, 2 × 16 for endpoints not listed.
  t.is(scanWindow(request(500, [["a", 40]])), 2 * (40 + 32));
  t.is(
    scanWindow(
      request(500, [
        ["a", 40],
        ["b", 0],
      ]),
    ),
    2 * (40 + 32),
    "a spent budget adds nothing",
  );
});

test("the room still bounds it, and it never reads nothing", (t) => {
  t.is(scanWindow(request(10, [["a", 400]])), 20);
  t.is(scanWindow(request(0, [])), 2);
});
