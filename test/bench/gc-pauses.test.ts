import test from "ava";
import { Histogram, Registry } from "prom-client";
import { gcPausesBetween, gcPausesOf } from "../../bench/gc-pauses.js";

/**
 * A registry holding the histogram prom-client's default metrics keep of GC
 * pauses, as /metrics prints it; by default with prom-client's own buckets.
 */
function gcHistogram(buckets = [0.001, 0.01, 0.1, 1, 2, 5]) {
  const registry = new Registry();
  const histogram = new Histogram({
    name: "nodejs_gc_duration_seconds",
    help: "Garbage collection duration by kind, one of major, minor, incremental or weakcb.",
    labelNames: ["kind"],
    buckets,
    registers: [registry],
  });
  return { registry, pause: (kind: string, seconds: number) => histogram.observe({ kind }, seconds) };
}

test("counts full and young pauses apart, with their time, and every pause over 10 ms", async (t) => {
  const { registry, pause } = gcHistogram();
  const before = gcPausesOf(await registry.metrics());
  t.deepEqual(before, { full: { count: 0, ms: 0 }, young: { count: 0, ms: 0 }, over10ms: 0 });
  pause("major", 0.018);
  pause("major", 0.004);
  pause("minor", 0.003);
  pause("minor", 0.012);
  pause("incremental", 0.02);
  const after = gcPausesOf(await registry.metrics());
  t.is(after.full.count, 2);
  t.is(Math.round(after.full.ms), 22);
  t.is(after.young.count, 2);
  t.is(Math.round(after.young.ms), 15);
  t.is(after.over10ms, 3);
  t.is(gcPausesBetween(before, after), "GC pauses (at least): 2 full (22 ms), 2 young (15 ms), 3 of them over 10 ms");
});

test("a service without the histogram reads as no pauses", (t) => {
  t.deepEqual(gcPausesOf("# metrics off\n"), { full: { count: 0, ms: 0 }, young: { count: 0, ms: 0 }, over10ms: 0 });
});

test("pauses over 10 ms are unknown, not all of them, when the histogram has no 10 ms bucket", async (t) => {
  const { registry, pause } = gcHistogram([0.001, 0.1]);
  pause("minor", 0.003);
  const pauses = gcPausesOf(await registry.metrics());
  t.is(pauses.young.count, 1);
  t.true(Number.isNaN(pauses.over10ms));
  t.regex(gcPausesBetween(gcPausesOf(""), pauses), /, \? of them over 10 ms$/);
});
