/**
 * The performance targets (docs/performance.md), checked against a run's
 * figures. A figure with a `key` is one a target reads.
 */
export interface Figure {
  store: string;
  figure: string;
  value: number;
  unit: string;
  key?: string;
}

interface Target {
  key: string;
  label: string;
  /** The stores it applies to (all when absent). */
  stores?: readonly string[];
  text: string;
  met: (value: number) => boolean;
}

const TARGETS: readonly Target[] = [
  { key: "a.ratio", label: "(a) delivered / bare ceiling", stores: ["postgres"], text: "≥ 75 %", met: (v) => v >= 75 },
  { key: "a.ratio", label: "(a) delivered / bare ceiling", stores: ["pglite"], text: "≥ 60 %", met: (v) => v >= 60 },
  // One subscription per event, over each protocol: the same targets.
  ...["rest", "grpc", "connect"].flatMap((protocol): Target[] => [
    {
      key: `g-${protocol}.ratio`,
      label: `(g-${protocol}) 1 subscription / ceiling`,
      stores: ["postgres"],
      text: "≥ 50 %",
      met: (v) => v >= 50,
    },
    {
      key: `g-${protocol}.ratio`,
      label: `(g-${protocol}) 1 subscription / ceiling`,
      stores: ["pglite"],
      text: "≥ 45 %",
      met: (v) => v >= 45,
    },
  ]),
  { key: "g-batch.ratio", label: "(g-batch) 100 a call / ceiling", stores: ["postgres"], text: "≥ 60 %", met: (v) => v >= 60 },
  { key: "peers.ratio", label: "(g-rest) delivered / best peer's", text: "≥ 2×", met: (v) => v >= 2 },
  { key: "b.p99", label: "(b) p99 at 200/s, machine idle", text: "≤ 25 ms", met: (v) => v <= 25 },
  { key: "b.p99.loaded", label: "(b) p99 at 200/s, one core busy", text: "≤ 50 ms", met: (v) => v <= 50 },
  { key: "c.ratio", label: "(c) storm p99 / calm p99", text: "≤ 1.5×", met: (v) => v <= 1.5 },
  { key: "d.rss", label: "(d) RSS, 100 000 pending", stores: ["postgres"], text: "< 250 MB", met: (v) => v < 250 },
  { key: "d.rss", label: "(d) RSS, 100 000 pending", stores: ["pglite"], text: "< 300 MB", met: (v) => v < 300 },
  { key: "e.p99", label: "(e) p99 at 1 000/s", text: "≤ 50 ms", met: (v) => v <= 50 },
  { key: "f.added", label: "(f) p99 added by a hung endpoint", text: "≤ 1 000 ms", met: (v) => v <= 1000 },
  { key: "lost", label: "lost or unsigned, all scenarios", text: "0", met: (v) => v === 0 },
];

export interface Verdict {
  store: string;
  key: string;
  label: string;
  value: number;
  target: string;
  met: boolean;
}

/** Each target that applies to a store with a figure for it, met or not. */
export function verdicts(figures: readonly Figure[]): Verdict[] {
  const stores = [...new Set(figures.filter((f) => f.key).map((f) => f.store))];
  const out: Verdict[] = [];
  for (const store of stores) {
    for (const target of TARGETS) {
      if (target.stores && !target.stores.includes(store)) continue;
      const found = figures.filter((f) => f.store === store && f.key === target.key);
      if (found.length === 0) continue;
      // "lost" adds up over scenarios; every other key has one figure.
      const value = target.key === "lost" ? found.reduce((sum, f) => sum + f.value, 0) : (found[0] as Figure).value;
      out.push({
        store,
        key: target.key,
        label: target.label,
        value,
        target: target.text,
        met: Number.isFinite(value) && target.met(value),
      });
    }
  }
  return out;
}

/** The one-screen summary: a line per target, ✓ or ✗. */
export function summary(list: readonly Verdict[]): string {
  const fmt = (n: number) => (Number.isFinite(n) ? (Math.abs(n) >= 100 ? Math.round(n).toString() : n.toFixed(1)) : "n/a");
  return list
    .map((v) => `  ${v.met ? "✓" : "✗"} ${v.store.padEnd(9)} ${v.label.padEnd(36)} ${fmt(v.value).padStart(8)}   target ${v.target}`)
    .join("\n");
}
