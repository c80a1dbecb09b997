import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { DeliveryStats } from "../../../src/gen/webhooks/v1/delivery_stats_pb.js";
import { TimeSeriesChart } from "../charts/time-series-chart.js";

/** The ranges the stats RPCs answer, as the picker names them. */
export const RANGES = [
  { value: "1h", label: "Last hour" },
  { value: "24h", label: "Last 24 hours" },
  { value: "7d", label: "Last 7 days" },
] as const;
export type Range = (typeof RANGES)[number]["value"];

/** A select of the three ranges; `id` names it for its label. */
export function RangePicker({ id, range, onChange }: { id: string; range: Range; onChange: (range: Range) => void }) {
  return (
    <p class="range-picker">
      <label for={id}>Period</label>{" "}
      <select id={id} value={range} onChange={(changed) => onChange(changed.currentTarget.value as Range)}>
        {RANGES.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    </p>
  );
}

/** "minute" or "hour": what one point of the stats covers. */
export const stepName = (stats: DeliveryStats): string => (stats.stepSeconds === 60 ? "minute" : "hour");

/** A count (int64, a bigint here) as a number: counts stay far below 2^53. */
const count = (value: bigint | undefined): number => Number(value ?? 0n);

/**
 * The range's totals and pending jobs as figures, then two charts (counts and
 * attempt latency per step), each with its figures as a table.
 */
export function DeliveryFigures({ stats }: { stats: DeliveryStats }) {
  const step = stepName(stats);
  const times = stats.points.map((point) => (point.start ? timestampMs(point.start) : 0));
  const totals = stats.totals;
  const figures = [
    ["Accepted", count(totals?.accepted)],
    ["Delivered", count(totals?.delivered)],
    ["Failed for good", count(totals?.failed)],
    ["Failed attempts", count(totals?.failedAttempts)],
    ["Pending now", count(stats.pending)],
  ] as const;
  return (
    <>
      <dl class="figures-totals">
        {figures.map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>{value.toLocaleString()}</dd>
          </div>
        ))}
      </dl>
      <TimeSeriesChart
        title={`Notifications per ${step}`}
        times={times}
        area
        series={[
          { name: "Accepted", values: stats.points.map((point) => count(point.accepted)) },
          { name: "Delivered", tone: "green", values: stats.points.map((point) => count(point.delivered)) },
          { name: "Failed for good", tone: "red", values: stats.points.map((point) => count(point.failed)) },
          { name: "Failed attempts", tone: "orange", values: stats.points.map((point) => count(point.failedAttempts)) },
        ]}
      />
      <TimeSeriesChart
        title={`Attempt latency per ${step}`}
        times={times}
        unit="ms"
        series={[
          { name: "p50", values: stats.points.map((point) => roundedOrNull(point.latencyP50Ms)) },
          { name: "p95", values: stats.points.map((point) => roundedOrNull(point.latencyP95Ms)) },
          { name: "p99", values: stats.points.map((point) => roundedOrNull(point.latencyP99Ms)) },
        ]}
      />
    </>
  );
}

/** Milliseconds to the unit (interpolated percentiles carry meaningless decimals); null without a figure. */
export const roundedOrNull = (value: number | undefined): number | null => (value === undefined ? null : Math.round(value));
