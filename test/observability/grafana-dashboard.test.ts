import { readFile } from "node:fs/promises";
import test from "ava";
import { sharedService } from "../helpers/service.js";

const running = sharedService(test);

interface Panel {
  title: string;
  targets?: Array<{ expr?: string }>;
}

/** PromQL's aggregation operators and keywords: names that are not metrics. */
const NOT_METRICS = new Set([
  "sum",
  "min",
  "max",
  "avg",
  "count",
  "stddev",
  "stdvar",
  "topk",
  "bottomk",
  "quantile",
  "count_values",
  "group",
  "and",
  "or",
  "unless",
  "offset",
  "bool",
]);

/** The metric names a PromQL expression reads: identifiers outside label matchers, ranges, strings and grouping clauses that call nothing. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, "")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "");
  const names: string[] = [];
  for (const match of bare.matchAll(/[a-zA-Z_:][\w:]*/g)) {
    const next = bare.slice((match.index ?? 0) + match[0].length).trimStart();
    if (next.startsWith("(") || NOT_METRICS.has(match[0])) continue;
    names.push(match[0]);
  }
  return names;
}

/** Every series name /metrics can answer: each metric's own, and its histogram's or summary's _bucket, _sum and _count. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name as string);
    if (type === "histogram" || type === "summary") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${name}${suffix}`);
  }
  return names;
}

test("every metric the Grafana dashboard queries is on a live service's /metrics", async (t) => {
  const dashboard = JSON.parse(await readFile("deploy/grafana/webhooks.json", "utf8")) as { panels: Panel[]; uid: string; title: string };
  t.truthy(dashboard.uid);
  const response = await fetch(`${running.baseUrl}/metrics`);
  t.is(response.status, 200);
  const exposed = exposedNames(await response.text());

  const queried = new Set<string>();
  for (const panel of dashboard.panels) {
    const exprs = (panel.targets ?? []).map((target) => target.expr ?? "");
    t.true(exprs.length > 0 && exprs.every((expr) => expr !== ""), `panel "${panel.title}" has queries`);
    for (const expr of exprs) {
      const names = metricNames(expr);
      t.true(names.length > 0, `"${expr}" reads a metric`);
      for (const name of names) {
        t.true(exposed.has(name), `panel "${panel.title}" queries ${name}, which /metrics does not expose`);
        queried.add(name);
      }
    }
  }
  // The panels of the portal's operator dashboard: accepted, delivered and failed, failed attempts, latency, pending.
  for (const name of [
    "webhook_notifications_accepted_total",
    "webhook_notifications_completed_total",
    "webhook_deliveries_total",
    "webhook_delivery_attempt_duration_seconds_bucket",
    "webhook_queue_pending",
  ]) {
    t.true(queried.has(name), `the dashboard shows ${name}`);
  }
});

test("the dashboard's metric names are read as PromQL reads them", (t) => {
  t.deepEqual(
    metricNames(
      'histogram_quantile(0.99, sum by (le, stage) (rate(webhook_delivery_lag_seconds_bucket{stage="x"}[$__rate_interval]))) / max(webhook_queue_pending) or vector(0)',
    ),
    ["webhook_delivery_lag_seconds_bucket", "webhook_queue_pending"],
  );
});
