/** How the charts write a figure and a time, in their tables, labels and read-outs alike. */

export const formatFigure = (value: number | null | undefined, unit = ""): string =>
  value === null || value === undefined ? "no figure" : `${value.toLocaleString()}${unit ? ` ${unit}` : ""}`;

export const formatMoment = (milliseconds: number): string =>
  new Date(milliseconds).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
