import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./charts.css";
import { useEffect, useRef, useState } from "preact/hooks";

/** The colours a series may take, each a custom property of the stylesheet (`--chart-blue`), light and dark. */
export const TONES = ["blue", "green", "red", "orange", "purple"] as const;
export type Tone = (typeof TONES)[number];

/** Line patterns by series position, so that the series differ by more than their colour. */
const DASHES: number[][] = [[], [8, 4], [2, 3], [10, 3, 2, 3], [4, 4]];
export const dashOf = (position: number): number[] => DASHES[position % DASHES.length] ?? [];

/** The colours of the page as it is now (light or dark), read from its stylesheet: a canvas cannot use CSS variables. */
export interface Theme {
  text: string;
  grid: string;
  font: string;
  tone(tone: Tone): string;
  /** The tone, see-through, for the area under a line (`#rrggbbaa`). */
  fill(tone: Tone): string;
}

function themeOf(element: HTMLElement): Theme {
  const style = getComputedStyle(element);
  const read = (name: string) => style.getPropertyValue(name).trim();
  return {
    text: read("--muted"),
    grid: read("--border"),
    font: `12px ${style.fontFamily}`,
    tone: (tone) => read(`--chart-${tone}`),
    fill: (tone) => `${read(`--chart-${tone}`)}33`,
  };
}

/** A number that changes whenever the system's colour scheme does. */
function useColorSchemeChanges(): number {
  const [changes, setChanges] = useState(0);
  useEffect(() => {
    const media = window.matchMedia("(prefers-color-scheme: dark)");
    const changed = () => setChanges((n) => n + 1);
    media.addEventListener("change", changed);
    return () => media.removeEventListener("change", changed);
  }, []);
  return changes;
}

/**
 * Draws a uPlot chart into the element the returned ref is given, as wide as
 * that element: again when `figures` (a key of what is drawn) or the colour
 * scheme changes, resized with the element. uPlot sizes its parts through
 * `element.style` (the CSS object model), which the portal's
 * Content-Security-Policy allows; it writes no style attribute or element.
 */
export function usePlot<Element extends HTMLElement>(
  options: (width: number, theme: Theme) => uPlot.Options,
  data: uPlot.AlignedData,
  figures: string,
) {
  const ref = useRef<Element>(null);
  const scheme = useColorSchemeChanges();
  // `figures` stands for `options` and `data`, which are new objects on every render.
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const plot = new uPlot(options(element.clientWidth, themeOf(element)), data, element);
    const resized = new ResizeObserver(() => {
      if (element.clientWidth !== plot.width) plot.setSize({ width: element.clientWidth, height: plot.height });
    });
    resized.observe(element);
    return () => {
      resized.disconnect();
      plot.destroy();
    };
  }, [figures, scheme]);
  return ref;
}
