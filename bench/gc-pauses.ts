/**
 * The service's garbage-collection pauses, from its /metrics (prom-client's
 * `nodejs_gc_duration_seconds`, by kind): a latency phase's tail is often a
 * handful of them. prom-client observes the first of the entries each
 * PerformanceObserver callback gets, so pauses that follow each other
 * closely may go uncounted: the figures are a lower bound.
 */
export interface GcPauses {
  /** Full (mark-compact) collections: their final, stop-the-world pauses. */
  full: { count: number; ms: number };
  /** Young-generation collections (scavenges). */
  young: { count: number; ms: number };
  /** Pauses of any kind longer than 10 ms; NaN when the histogram has no 10 ms bucket. */
  over10ms: number;
}

/** What the histogram holds for `kind`: its count, its sum, and its observations above 10 ms. */
function histogram(metrics: string, kind: string): { count: number; ms: number; over10ms: number } {
  const sample = (suffix: string, extra = "") => {
    const labels = `(?:\\{(?=[^}]*kind="${kind}")${extra}[^}]*\\})`;
    const match = new RegExp(`^nodejs_gc_duration_seconds_${suffix}${labels} (\\S+)$`, "m").exec(metrics);
    return match ? Number(match[1]) : undefined;
  };
  const count = sample("count") ?? 0;
  const within10ms = sample("bucket", '(?=[^}]*le="0.01")');
  return {
    count,
    ms: (sample("sum") ?? 0) * 1000,
    // A kind never seen has no series at all: none of its pauses passed 10 ms.
    over10ms: count === 0 ? 0 : within10ms === undefined ? Number.NaN : count - within10ms,
  };
}

/** The pauses counted so far (prom-client's histograms only grow). */
export function gcPausesOf(metrics: string): GcPauses {
  const full = histogram(metrics, "major");
  const young = histogram(metrics, "minor");
  const incremental = histogram(metrics, "incremental");
  const weak = histogram(metrics, "weakcb");
  return {
    full: { count: full.count, ms: full.ms },
    young: { count: young.count, ms: young.ms },
    over10ms: full.over10ms + young.over10ms + incremental.over10ms + weak.over10ms,
  };
}

/** The pauses between two readings, as one line's worth of text. */
export function gcPausesBetween(before: GcPauses, after: GcPauses): string {
  const ms = (value: number) => Math.round(value);
  const full = { count: after.full.count - before.full.count, ms: after.full.ms - before.full.ms };
  const young = { count: after.young.count - before.young.count, ms: after.young.ms - before.young.ms };
  const over10ms = after.over10ms - before.over10ms;
  return `GC pauses (at least): ${full.count} full (${ms(full.ms)} ms), ${young.count} young (${ms(young.ms)} ms), ${Number.isNaN(over10ms) ? "?" : over10ms} of them over 10 ms`;
}
