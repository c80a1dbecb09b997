import { timestampMs } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import type { EndpointHealth } from "../../../src/gen/webhooks/v1/delivery_stats_pb.js";
import { Sparkline } from "../charts/sparkline.js";
import { formatTime } from "../format.js";
import { roundedOrNull } from "./delivery-stats.js";

type Column = "client" | "origin" | "successRate" | "p95" | "attempts" | "failingSince";
type Direction = "ascending" | "descending";

/** What each sortable column sorts by; undefined (no figure) sorts last either way. */
const KEYS: Record<Column, (endpoint: EndpointHealth) => string | number | undefined> = {
  client: (endpoint) => endpoint.clientId,
  origin: (endpoint) => endpoint.origin,
  successRate: (endpoint) => endpoint.successRate,
  p95: (endpoint) => endpoint.latencyP95Ms,
  attempts: (endpoint) => Number(endpoint.attempts),
  failingSince: (endpoint) => (endpoint.failingSince ? timestampMs(endpoint.failingSince) : undefined),
};

function sorted(endpoints: readonly EndpointHealth[], column: Column, direction: Direction): EndpointHealth[] {
  const key = KEYS[column];
  const sign = direction === "ascending" ? 1 : -1;
  return [...endpoints].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    if (x === undefined || y === undefined) return x === y ? 0 : x === undefined ? 1 : -1;
    return (x < y ? -1 : x > y ? 1 : 0) * sign;
  });
}

/** The direction a column first sorts in: the worst first (lowest success rate, slowest, most attempts, failing longest). */
const FIRST: Record<Column, Direction> = {
  client: "ascending",
  origin: "ascending",
  successRate: "ascending",
  p95: "descending",
  attempts: "descending",
  failingSince: "ascending",
};

const percent = (rate: number | undefined) => (rate === undefined ? "—" : `${(rate * 100).toFixed(1)} %`);

export interface EndpointHealthTableProps {
  endpoints: readonly EndpointHealth[];
  /** "minute" or "hour": a sparkline point's width. */
  step: string;
  /** Shows the client column, each client a button that calls this (the operator: narrow the figures to that client). */
  onClient?: (clientId: string) => void;
}

/**
 * Endpoints (client and URL origin), worst first as the service ranks them, or
 * sorted by any column with the buttons in its heading.
 */
export function EndpointHealthTable({ endpoints, step, onClient }: EndpointHealthTableProps) {
  const [order, setOrder] = useState<{ column: Column; direction: Direction }>();
  if (endpoints.length === 0) return <p class="hint">No attempts in this period.</p>;
  const rows = order ? sorted(endpoints, order.column, order.direction) : endpoints;
  const heading = (column: Column, name: string) => {
    const current = order?.column === column ? order.direction : undefined;
    const next: Direction = current ? (current === "ascending" ? "descending" : "ascending") : FIRST[column];
    return (
      <th scope="col" aria-sort={current ?? "none"}>
        <button type="button" class="sort" onClick={() => setOrder({ column, direction: next })}>
          {name}
          <span aria-hidden="true">{current === "ascending" ? " ▲" : current === "descending" ? " ▼" : ""}</span>
        </button>
      </th>
    );
  };
  return (
    <div class="table-scroll">
      <table class="endpoint-health">
        <caption class="visually-hidden">
          Endpoint health, {order ? `sorted by ${order.column}, ${order.direction}` : "worst first"}
        </caption>
        <thead>
          <tr>
            {onClient && heading("client", "Client")}
            {heading("origin", "Endpoint")}
            {heading("successRate", "Success rate")}
            {heading("p95", "p95 latency")}
            {heading("attempts", "Attempts")}
            {heading("failingSince", "Failing since")}
            <th scope="col">Failed attempts per {step}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((endpoint) => (
            <tr key={`${endpoint.clientId} ${endpoint.origin}`}>
              {onClient && (
                <td class="mono" data-label="Client">
                  <button
                    type="button"
                    class="link"
                    aria-label={`Show only ${endpoint.clientId}`}
                    onClick={() => onClient(endpoint.clientId)}
                  >
                    {endpoint.clientId}
                  </button>
                </td>
              )}
              <td class="url" data-label="Endpoint">
                {endpoint.origin}
              </td>
              <td data-label="Success rate">{percent(endpoint.successRate)}</td>
              <td data-label="p95 latency">{endpoint.latencyP95Ms === undefined ? "—" : `${roundedOrNull(endpoint.latencyP95Ms)} ms`}</td>
              <td data-label="Attempts">
                {Number(endpoint.attempts).toLocaleString()} ({Number(endpoint.failedAttempts).toLocaleString()} failed)
              </td>
              <td data-label="Failing since">{endpoint.failingSince ? formatTime(endpoint.failingSince) : "—"}</td>
              <td data-label={`Failed attempts per ${step}`}>
                <Sparkline
                  label={`${endpoint.origin}, failed attempts per ${step}`}
                  values={endpoint.failedAttemptsPerStep.map(Number)}
                  tone="red"
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
