import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import { DeliveryService, GetClientDeliveryStatsResponseSchema } from "../../gen/webhooks/v1/delivery_service_pb.js";
import type { DeliveryStats, DeliveryStatsPoint } from "../../gen/webhooks/v1/delivery_stats_pb.js";
import { EventService, GetDeliveryStatsResponseSchema } from "../../gen/webhooks/v1/event_service_pb.js";
import { type Output, time } from "../output.js";
import type { Context } from "./context.js";

const RANGE_NAMES: Record<string, string> = {
  "1h": "the last hour, per minute",
  "24h": "the last 24 hours, per hour",
  "7d": "the last 7 days, per hour",
};

const ms = (value: number | undefined) => (value === undefined ? "-" : String(Math.round(value)));
const percent = (value: number | undefined) => (value === undefined ? "-" : `${(value * 100).toFixed(1)}%`);

function figures(point: DeliveryStatsPoint): string[] {
  return [point.accepted, point.delivered, point.failed, point.attempts, point.failedAttempts].map(String);
}

function print(out: Output, stats: DeliveryStats, whose: string): void {
  const totals = stats.totals;
  out.line(`${RANGE_NAMES[stats.range] ?? stats.range} (${whose})`);
  if (totals) {
    out.fields([
      ["accepted", String(totals.accepted)],
      ["delivered", String(totals.delivered)],
      ["failed for good", String(totals.failed)],
      ["attempts", `${totals.attempts} (${totals.failedAttempts} failed)`],
      ["latency", `p50 ${ms(totals.latencyP50Ms)} ms, p95 ${ms(totals.latencyP95Ms)} ms, p99 ${ms(totals.latencyP99Ms)} ms`],
      ["pending now", String(stats.pending)],
    ]);
  }
  out.line();
  // Steps with nothing in them are left out: a quiet week would be 168 lines of zeros.
  const active = stats.points.filter((point) => point.accepted > 0n || point.attempts > 0n);
  out.table(
    ["FROM", "ACCEPTED", "DELIVERED", "FAILED", "ATTEMPTS", "FAILED ATTEMPTS", "P50 MS", "P95 MS", "P99 MS"],
    active.map((point) => [time(point.start), ...figures(point), ms(point.latencyP50Ms), ms(point.latencyP95Ms), ms(point.latencyP99Ms)]),
  );
  out.line();
  out.table(
    ["CLIENT", "ENDPOINT", "SUCCESS", "P95 MS", "ATTEMPTS", "FAILING SINCE"],
    stats.endpoints.map((endpoint) => [
      endpoint.clientId,
      endpoint.origin,
      endpoint.successRate !== undefined && endpoint.successRate < 1
        ? out.style("red", percent(endpoint.successRate))
        : percent(endpoint.successRate),
      ms(endpoint.latencyP95Ms),
      String(endpoint.attempts),
      endpoint.failingSince ? out.style("red", timestampDate(endpoint.failingSince).toISOString()) : "",
    ]),
  );
}

/** `webhooks stats`: delivery figures from the store, the caller's own with an API key, every client's with the admin token. */
export function addStatsCommand(program: Command, context: Context): void {
  program
    .command("stats")
    .description(
      "delivery figures (accepted, delivered, failed, attempts, latency) and endpoint health: with an API key the client's own; with the admin token every client's, or one's (--client)",
    )
    .option("--range <range>", "1h (per minute), 24h or 7d (per hour)", "1h")
    .option("--client <clientId>", "admin: only this client's figures")
    .action(async (options: { range: string; client?: string }) => {
      const { out, connection } = context();
      if (options.client === undefined && connection.available === "apiKey") {
        const answer = await connection.client(DeliveryService, "apiKey").getClientDeliveryStats({ range: options.range });
        if (out.json) return out.message(GetClientDeliveryStatsResponseSchema, answer);
        if (answer.stats) print(out, answer.stats, "this client");
        return;
      }
      const answer = await connection
        .client(EventService, "adminToken")
        .getDeliveryStats({ range: options.range, clientId: options.client ?? "" });
      if (out.json) return out.message(GetDeliveryStatsResponseSchema, answer);
      if (answer.stats) print(out, answer.stats, options.client ? `client ${options.client}` : "every client");
    });
}
