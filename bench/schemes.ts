/**
 * The signature schemes the throughput scenario and the ceiling are measured
 * with, and the table that shows their costs side by side. Reported figures,
 * not targets: RSA-2048 is the contract's default, Ed25519 what a Standard
 * Webhooks subscription can choose instead.
 */
import type { SignatureScheme } from "../src/domain/model.js";

export interface Scheme {
  /** What `--only=` takes and what the scenario's figures start with, in brackets. */
  scenario: string;
  name: string;
  signatureScheme: SignatureScheme;
  event: string;
  /** The prefix of its subscriptions' receiver paths; no other scenario's starts the same. */
  tag: string;
  /** The receiver path its ceiling loop posts to. */
  ceilingPath: string;
}

export const SCHEMES: readonly Scheme[] = [
  {
    scenario: "a",
    name: "RSA-2048",
    signatureScheme: "RSA_SHA256",
    event: "Bench.Throughput",
    tag: "t",
    ceilingPath: "ceiling",
  },
  {
    scenario: "a-ed25519",
    name: "Ed25519",
    signatureScheme: "STANDARD_WEBHOOKS_ED25519",
    event: "Bench.ThroughputEd25519",
    tag: "ed",
    ceilingPath: "ceiling-ed25519",
  },
];

/**
 * One measurement in one scheme: a store's throughput scenario, or (store
 * `machine`) one run of the ceiling loop, whose rate stands in delivered/s.
 */
export interface SchemeFigures {
  store: string;
  scheme: string;
  deliveredPerSecond: number;
  /** The median of its segments' shares, each of the mean of the ceilings measured just before and after it; absent for the ceiling itself. */
  shareOfCeilingPercent?: number;
  /** Per delivered notification; a process not measured is absent (the ceiling has no service or database). */
  cpuPerNotificationMicros: { service?: number; database?: number; receiver?: number; machine: number };
}

const fmt = (n: number | undefined) =>
  n === undefined || !Number.isFinite(n) ? "—" : Math.abs(n) >= 100 ? Math.round(n).toString() : n.toFixed(1);

/** A line per store and scheme; the ceiling's line is the mean of its runs (around each segment of (a)). */
export function schemeTable(figures: readonly SchemeFigures[]): string {
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const lines: SchemeFigures[] = [];
  for (const scheme of new Set(figures.map((f) => f.scheme))) {
    const ceilings = figures.filter((f) => f.store === "machine" && f.scheme === scheme);
    if (ceilings.length > 0)
      lines.push({
        store: "machine",
        scheme,
        deliveredPerSecond: mean(ceilings.map((f) => f.deliveredPerSecond)),
        cpuPerNotificationMicros: { machine: mean(ceilings.map((f) => f.cpuPerNotificationMicros.machine)) },
      });
  }
  lines.push(...figures.filter((f) => f.store !== "machine"));
  const columns = (cells: readonly string[]) =>
    `  ${(cells[0] ?? "").padEnd(9)} ${(cells[1] ?? "").padEnd(9)} ${cells
      .slice(2)
      .map((cell) => cell.padStart(11))
      .join(" ")}`;
  const header = [
    // Over the last four columns.
    columns(["", "", "", "", "CPU per notification (µs)".padStart(36)]),
    columns(["", "scheme", "delivered/s", "of ceiling", "service", "database", "receiver", "machine"]),
  ];
  const body = lines.map((f) => {
    const cpu = f.cpuPerNotificationMicros;
    const share = f.shareOfCeilingPercent === undefined ? "—" : `${fmt(f.shareOfCeilingPercent)} %`;
    return columns([
      f.store === "machine" ? "ceiling" : f.store,
      f.scheme,
      fmt(f.deliveredPerSecond),
      share,
      ...[cpu.service, cpu.database, cpu.receiver, cpu.machine].map(fmt),
    ]);
  });
  return [...header, ...body].join("\n");
}
