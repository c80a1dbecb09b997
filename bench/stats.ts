/** Small helpers for the benchmark's figures. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

/** The middle value (the upper of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : (sorted[Math.floor(sorted.length / 2)] as number);
}

export function summarise(values: readonly number[]): { count: number; p50: number; p95: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

/** Rate over the steady part: the middle 80% of arrival times. */
export function steadyRate(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  if (sorted.length < 10) return Number.NaN;
  const from = sorted[Math.floor(sorted.length * 0.1)] as number;
  const to = sorted[Math.floor(sorted.length * 0.9)] as number;
  const count = Math.floor(sorted.length * 0.9) - Math.floor(sorted.length * 0.1);
  return to > from ? (count * 1000) / (to - from) : Number.NaN;
}

/**
 * When the slowest 1 % of receipts arrived, in seconds from the first (whose wall-clock time it
 * gives, to line them up with logs), with their latency: a few bunched together is a stall, many
 * spread over the phase a general slowdown (for diagnosis).
 */
export function slowest(records: readonly { at: number; latencyMs: number }[]): string {
  if (records.length === 0) return "no receipts";
  const first = Math.min(...records.map((record) => record.at));
  const worst = [...records].sort((a, b) => b.latencyMs - a.latencyMs).slice(0, Math.max(1, Math.ceil(records.length / 100)));
  const at = worst.sort((a, b) => a.at - b.at).map((record) => `${((record.at - first) / 1000).toFixed(2)} s: ${record.latencyMs} ms`);
  return `slowest 1 % (from ${new Date(first).toISOString()}) at ${at.join(", ")}`;
}
