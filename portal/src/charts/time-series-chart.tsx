import { useId, useRef, useState } from "preact/hooks";
import type uPlot from "uplot";
import { ErrorText } from "../components.js";
import { formatFigure, formatMoment } from "./figures.js";
import { dashOf, TONES, type Tone, usePlot } from "./plot.js";

/** One line of a chart: a figure for each of the chart's times (null: none, drawn as a gap). */
export interface Series {
  name: string;
  values: ReadonlyArray<number | null>;
  /** Its colour; by default the next of TONES. */
  tone?: Tone;
}

export interface TimeSeriesChartProps {
  /** What the chart shows ("Notifications per minute"): its caption, and its table's. */
  title: string;
  /** When each period starts, in milliseconds since the epoch, oldest first. */
  times: readonly number[];
  series: readonly Series[];
  /** The figures' unit ("ms"), on the axis and in the table's headings. */
  unit?: string;
  /** Fills the area under each line. */
  area?: boolean;
  /** The plot's height in CSS pixels. */
  height?: number;
}

const toneOf = (series: Series, position: number): Tone => series.tone ?? TONES[position % TONES.length] ?? "blue";

/**
 * A line (or area) chart of figures over time, with its figures as a table
 * behind a disclosure: what a screen reader reads, and what a keyboard
 * reaches. The canvas itself is hidden from assistive technology.
 */
export function TimeSeriesChart({ title, times, series, unit = "", area = false, height = 200 }: TimeSeriesChartProps) {
  const captionId = useId();
  const readout = useRef<HTMLParagraphElement>(null);
  const data: uPlot.AlignedData = [Array.from(times), ...series.map((line) => Array.from(line.values))];
  const plot = usePlot<HTMLDivElement>(
    (width, theme) => ({
      width,
      height,
      ms: 1,
      legend: { show: false },
      cursor: { drag: { x: false, y: false, setScale: false } },
      scales: { y: { range: (_plot, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: theme.text, font: theme.font, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1 } },
        {
          stroke: theme.text,
          font: theme.font,
          grid: { stroke: theme.grid, width: 1 },
          ticks: { stroke: theme.grid, width: 1 },
          values: (_plot, splits) => splits.map((split) => `${split.toLocaleString()}${unit ? ` ${unit}` : ""}`),
          // Wide enough for the longest label (about 7 px a character at 12 px).
          size: (_plot, labels) => Math.max(40, ...(labels ?? []).map((label) => label.length * 7 + 18)),
        },
      ],
      series: [
        {},
        ...series.map((line, position) => ({
          label: line.name,
          stroke: theme.tone(toneOf(line, position)),
          width: 2,
          dash: dashOf(position),
          ...(area ? { fill: theme.fill(toneOf(line, position)) } : {}),
        })),
      ],
      hooks: {
        // The figures under the mouse pointer, for a quick look; the table has them all.
        setCursor: [
          (drawn) => {
            const index = drawn.cursor.idx;
            const time = index === null || index === undefined ? undefined : times[index];
            if (!readout.current) return;
            readout.current.textContent =
              index === null || index === undefined || time === undefined
                ? ""
                : `${formatMoment(time)}: ${series.map((line) => `${line.name} ${formatFigure(line.values[index], unit)}`).join(", ")}`;
          },
        ],
      },
    }),
    data,
    JSON.stringify([height, area, unit, data, series.map((line) => [line.name, line.tone])]),
  );

  const uneven = series.find((line) => line.values.length !== times.length);
  if (uneven) return <ErrorText error={`${title}: ${uneven.name} has ${uneven.values.length} figures for ${times.length} times`} />;
  return (
    <figure class="chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>{title}</figcaption>
      {times.length === 0 ? (
        <p class="hint">No figures for this period.</p>
      ) : (
        <>
          <ul class="chart-legend" aria-hidden="true">
            {series.map((line, position) => (
              <li key={line.name}>
                <span class={`swatch dash-${position % 5} tone-${toneOf(line, position)}`} />
                {line.name}
              </li>
            ))}
          </ul>
          <div class="chart-plot" ref={plot} aria-hidden="true" />
          <p class="chart-readout hint" ref={readout} aria-hidden="true" />
          <FiguresTable title={title} times={times} series={series} unit={unit} />
        </>
      )}
    </figure>
  );
}

/**
 * The chart's figures, a row per time, in a disclosure that a keyboard
 * opens. The table is made when opened: a week of minutes is many rows.
 */
function FiguresTable({
  title,
  times,
  series,
  unit,
}: {
  title: string;
  times: readonly number[];
  series: readonly Series[];
  unit: string;
}) {
  const [open, setOpen] = useState(false);
  return (
    <details class="chart-figures" onToggle={(toggled) => setOpen(toggled.currentTarget.open)}>
      <summary>{title}: the figures as a table</summary>
      {open && <Figures title={title} times={times} series={series} unit={unit} />}
    </details>
  );
}

function Figures({ title, times, series, unit }: { title: string; times: readonly number[]; series: readonly Series[]; unit: string }) {
  const heading = (name: string) => (unit ? `${name} (${unit})` : name);
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must be reachable by keyboard to scroll it.
    <section class="table-scroll" aria-label={`${title}, figures`} tabIndex={0}>
      <table>
        <caption class="visually-hidden">{title}</caption>
        <thead>
          <tr>
            <th scope="col">Period from</th>
            {series.map((line) => (
              <th scope="col" key={line.name}>
                {heading(line.name)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {times.map((time, index) => (
            <tr key={time}>
              <th scope="row" data-label="Period from">
                <time dateTime={new Date(time).toISOString()}>{formatMoment(time)}</time>
              </th>
              {series.map((line) => (
                <td key={line.name} data-label={heading(line.name)}>
                  {line.values[index]?.toLocaleString() ?? "—"}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
