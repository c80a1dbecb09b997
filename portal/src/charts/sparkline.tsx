import { formatFigure } from "./figures.js";
import { type Tone, usePlot } from "./plot.js";

export interface SparklineProps {
  /** What the figures are ("p95 latency per hour"): the start of the text that stands for the picture. */
  label: string;
  /** Oldest first; null: no figure. */
  values: ReadonlyArray<number | null>;
  unit?: string;
  tone?: Tone;
}

/**
 * A word-sized line chart, for a table cell. It is an image to assistive
 * technology, whose text is the same figures in words, oldest first.
 */
export function Sparkline({ label, values, unit = "", tone = "blue" }: SparklineProps) {
  const positions = values.map((_value, index) => index);
  const plot = usePlot<HTMLSpanElement>(
    (width, theme) => ({
      width,
      height: 28,
      padding: [3, 1, 3, 1],
      legend: { show: false },
      cursor: { show: false },
      select: { show: false, left: 0, top: 0, width: 0, height: 0 },
      scales: { x: { time: false }, y: { range: (_plot, _min, max) => [0, max > 0 ? max : 1] } },
      axes: [{ show: false }, { show: false }],
      series: [{}, { stroke: theme.tone(tone), fill: theme.fill(tone), width: 1.5 }],
    }),
    [positions, Array.from(values)],
    JSON.stringify([values, tone]),
  );
  const text =
    values.length === 0 ? `${label}: no figures` : `${label}, oldest first: ${values.map((value) => formatFigure(value, unit)).join(", ")}`;
  return <span class="sparkline" role="img" aria-label={text} ref={plot} />;
}
