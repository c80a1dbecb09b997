/**
 * The figures the chart test page draws (portal/test-pages/charts.tsx), and
 * test/portal/charts.test.ts reads back from its tables: twelve hours from
 * 1 November 2026, 00:00 UTC, with a gap (null) where an hour had no attempt.
 */
const HOUR = 3_600_000;
export const TIMES: number[] = Array.from({ length: 12 }, (_unused, index) => Date.UTC(2026, 10, 1) + index * HOUR);

export const COUNTS = [
  { name: "Accepted", values: [120, 135, 1_250, 980, 410, 390, 400, 385, 2_015, 1_870, 600, 320] },
  { name: "Delivered", tone: "green", values: [118, 135, 1_240, 975, 402, 390, 396, 380, 1_990, 1_860, 598, 318] },
  { name: "Failed for good", tone: "red", values: [0, 0, 3, 1, 0, 0, 2, 0, 12, 4, 0, 0] },
  { name: "Failed attempts", tone: "orange", values: [4, 0, 22, 9, 3, 0, 8, 2, 61, 17, 1, 0] },
] as const;

export const LATENCY = [
  { name: "p50", values: [42, 40, 55, 51, 44, null, 41, 43, 88, 70, 45, 41] },
  { name: "p95", values: [130, 121, 260, 240, 150, null, 128, 133, 910, 640, 160, 125] },
  { name: "p99", values: [310, 280, 1_400, 700, 330, null, 300, 320, 2_950, 1_800, 340, 290] },
] as const;

export const ENDPOINTS = [
  { origin: "https://warehouse.example", p95: [130, 121, 260, 240, 150, 140, 128, 133, 910, 640, 160, 125] },
  { origin: "https://billing.example", p95: [80, 82, null, null, 90, 85, 88, 79, 81, 84, 86, 83] },
] as const;
