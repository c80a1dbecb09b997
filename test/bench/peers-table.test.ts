import test from "ava";
import { aheadOfPeers, peersTable } from "../../bench/peers-table.js";
import type { Figure } from "../../bench/targets.js";
import { verdicts } from "../../bench/targets.js";

const delivered = (store: string, value: number): Figure => ({
  store,
  figure: "(g-rest) delivered notifications/s (steady)",
  value,
  unit: "/s",
});

test("(g-rest) is compared with the best peer's delivered/s, on each store measured", (t) => {
  const rows = [delivered("postgres", 1500), delivered("pglite", 700), delivered("bullmq", 800), delivered("pg-boss", 550)];
  const ratios = aheadOfPeers(rows);
  t.deepEqual(
    ratios.map((row) => [row.store, row.value]),
    [
      ["postgres", 1500 / 800],
      ["pglite", 700 / 800],
    ],
  );
  t.deepEqual(
    verdicts(ratios).map((verdict) => [verdict.store, verdict.met]),
    [
      ["postgres", false],
      ["pglite", false],
    ],
    "2× the best peer is the target",
  );
  t.true(verdicts(aheadOfPeers([delivered("postgres", 1700), delivered("bullmq", 800)]))[0]?.met ?? false);
  t.deepEqual(aheadOfPeers([delivered("postgres", 1500)]), [], "no peer measured: nothing to compare");
});

test("the side-by-side table has a line per system, the service's named by its store", (t) => {
  const table = peersTable([
    delivered("postgres", 1500),
    { store: "postgres", figure: "(g-rest) service / ceiling (the ceilings around it)", value: 35, unit: "%" },
    delivered("graphile-worker", 220),
    { store: "graphile-worker", figure: "(b) p99 publish→receipt at 200/s", value: 9, unit: "ms" },
  ]).split("\n");
  t.is(table.length, 3);
  t.regex(table[1] ?? "", /this service, postgres\s+1500 \/s\s+35 %\s+n\/a\s+n\/a/);
  t.regex(table[2] ?? "", /graphile-worker\s+220 \/s\s+n\/a\s+n\/a\s+9 ms/);
});
