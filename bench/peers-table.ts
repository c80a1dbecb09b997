/** The service beside the peers (bench/peers.ts), from one run's figures. */
import type { Figure } from "./targets.js";

/** What teams build instead of the service, as bench/peers/ has them (`--peers=` takes these names). */
export const PEERS = ["graphile-worker", "pg-boss", "bullmq"] as const;

const DELIVERED = "(g-rest) delivered notifications/s (steady)";

/** For each store measured, (g-rest)'s delivered/s over the best peer's: the `peers.ratio` target. */
export function aheadOfPeers(rows: readonly Figure[]): Figure[] {
  const best = Math.max(...rows.filter((row) => isPeer(row.store) && row.figure === DELIVERED).map((row) => row.value));
  if (!Number.isFinite(best) || best <= 0) return [];
  return rows
    .filter((row) => !isPeer(row.store) && row.figure === DELIVERED)
    .map((row) => ({
      store: row.store,
      figure: "(g-rest) delivered / best peer's",
      value: row.value / best,
      unit: "×",
      key: "peers.ratio",
    }));
}

/** One line per system: delivered/s, share of the ceiling, machine CPU per notification, p99 at 200/s. */
export function peersTable(rows: readonly Figure[]): string {
  const value = (store: string, figure: string) => rows.find((row) => row.store === store && row.figure.startsWith(figure))?.value;
  const fmt = (n: number | undefined, unit: string) => (n === undefined || !Number.isFinite(n) ? "n/a" : `${Math.round(n)} ${unit}`);
  const systems = [...new Set(rows.filter((row) => row.figure === DELIVERED).map((row) => row.store))];
  const lines = systems.map((store) =>
    [
      (isPeer(store) ? store : `this service, ${store}`).padEnd(28),
      fmt(value(store, DELIVERED), "/s").padStart(9),
      fmt(value(store, "(g-rest) service / ceiling") ?? value(store, "(g-rest) peer / ceiling"), "%").padStart(6),
      fmt(value(store, "(g-rest) machine CPU per notification"), "µs").padStart(9),
      // The service's is (b)'s, published over gRPC; the peers' over REST.
      fmt(value(store, "(b) p99 publish→receipt at 200/s"), "ms").padStart(7),
    ].join("  "),
  );
  return [
    `  ${"system".padEnd(28)}  ${"delivered".padStart(9)}  ${"share".padStart(6)}  ${"CPU/ntf".padStart(9)}  ${"p99@200".padStart(7)}`,
    ...lines.map((line) => `  ${line}`),
  ].join("\n");
}

const isPeer = (store: string) => (PEERS as readonly string[]).includes(store);
