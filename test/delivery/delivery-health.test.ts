import test from "ava";
import { DeliveryHealth } from "../../src/delivery/delivery-health.js";
import { StoreUnavailableError } from "../../src/domain/errors.js";

function setup() {
  let now = Date.UTC(2026, 10, 22, 12);
  let unserved = 0;
  const health = new DeliveryHealth({ stallAfterMs: 10_000, unservedMs: () => unserved, now: () => now });
  return {
    health,
    advance: (ms: number) => {
      now += ms;
    },
    setUnserved: (ms: number) => {
      unserved = ms;
    },
  };
}

const unreachable = new StoreUnavailableError("the database is unreachable: Connection terminated unexpectedly");

test("one failed poll is a blip; a second in a row reports the store unreachable, since the first, until a poll succeeds", (t) => {
  const { health, advance } = setup();
  t.deepEqual(health.report(), { ok: true });
  health.polled({ ok: false, error: unreachable });
  t.deepEqual(health.report(), { ok: true }, "one failure alone");
  advance(200);
  health.polled({ ok: false, error: unreachable });
  t.deepEqual(health.report(), {
    ok: false,
    reason:
      "the delivery scheduler cannot reach its store (since 2026-11-22T12:00:00.000Z): the database is unreachable: Connection terminated unexpectedly",
  });
  health.polled({ ok: true });
  t.deepEqual(health.report(), { ok: true });
});

test("a poll refused for another reason says so rather than blaming the connection", (t) => {
  const { health } = setup();
  health.polled({ ok: false, error: new Error("LIMIT must not be negative") });
  health.polled({ ok: false, error: new Error("LIMIT must not be negative") });
  t.regex(health.report().reason ?? "", /^the delivery scheduler fails polling its store \(since .+\): LIMIT must not be negative$/);
});

test("saves of job states failing are reported too, and recover with the next that succeeds", (t) => {
  const { health } = setup();
  health.saved({ ok: false, error: unreachable });
  health.saved({ ok: false, error: unreachable });
  t.regex(health.report().reason ?? "", /cannot reach its store/);
  health.saved({ ok: true });
  t.deepEqual(health.report(), { ok: true });
});

test("no poll succeeding for longer than stallAfterMs while one was wanted is a stall", (t) => {
  const { health, setUnserved } = setup();
  setUnserved(9_000);
  t.true(health.report().ok);
  setUnserved(12_000);
  t.deepEqual(health.report(), { ok: false, reason: "no poll of the delivery scheduler's store has succeeded for 12 s" });
  setUnserved(0);
  t.true(health.report().ok);
});

test("failed saves count while they are recent: once idle, with polls succeeding, they stop counting after stallAfterMs", (t) => {
  const { health, advance } = setup();
  health.saved({ ok: false, error: unreachable });
  health.saved({ ok: false, error: unreachable });
  t.false(health.report().ok, "two failed saves in a row");
  advance(5_000);
  health.polled({ ok: true });
  t.false(health.report().ok, "still recent");
  advance(5_001);
  health.polled({ ok: true });
  t.deepEqual(health.report(), { ok: true }, "nothing saved since, and the store answers polls");
  health.saved({ ok: false, error: unreachable });
  t.deepEqual(health.report(), { ok: true }, "a streak starts anew: one failure alone is a blip");
});
