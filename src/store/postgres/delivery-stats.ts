import {
  type DeliveryStatsStore,
  type FailingSubscription,
  LATENCY_BOUNDS_MS,
  STEP_SECONDS,
  type StatsCell,
  type StatsQuery,
  type StatsStep,
} from "../../domain/delivery-stats.js";
import type { SqlPool } from "./sql-pool.js";

/**
 * Delivery statistics in `wh_delivery_stats` (made by a migration,
 * schema.ts). The job store's statements count as they write
 * (job-statements.ts, through the CTEs below); this reads and purges.
 */

const LATENCY_COLUMNS = LATENCY_BOUNDS_MS.map((bound) => `le_${bound}`);
const STEPS = `(VALUES ${Object.values(STEP_SECONDS)
  .map((seconds) => `(${seconds})`)
  .join(", ")}) AS steps (step)`;
const STEP_START = (at: string) => `date_bin(make_interval(secs => steps.step), ${at}, timestamptz 'epoch')`;
const ADDED = (columns: readonly string[]) => columns.map((column) => `${column} = s.${column} + EXCLUDED.${column}`).join(", ");

/**
 * A CTE (`counted_accepts`) adding the notifications of INSERT's parameters
 * (client ids $3, creation times $9, endpoints $11) to their endpoints'
 * minute and hour rows of writer `writer` (a parameter). Rows are written in
 * key order, so that statements writing several never wait on each other in
 * a circle.
 */
export function countAccepted(writer: string): string {
  return `counted_accepts AS (
    INSERT INTO wh_delivery_stats AS s (step, start, endpoint, writer, client_id, accepted)
    SELECT steps.step, ${STEP_START("t.created_at")}, t.endpoint, ${writer}::text, min(t.client_id), count(*)
    FROM unnest($3::text[], $9::timestamptz[], $11::text[]) AS t (client_id, created_at, endpoint) CROSS JOIN ${STEPS}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (step, start, endpoint, writer) DO UPDATE SET ${ADDED(["accepted"])}
  )`;
}

/**
 * A CTE (`counted_attempts`) adding the attempts of the CTE `input` (job
 * ids $1) to their endpoints' minute and hour rows of writer `writer`: the
 * notifications they delivered or failed for good (`input.status`), the
 * attempts, the failed ones, and the latency histogram. The endpoint is
 * the job's, read before the statement ends or deletes it; an attempt whose
 * job is gone (another instance finished it meanwhile) is recorded but not
 * counted.
 */
export function countAttempts(writer: string): string {
  const latency = LATENCY_BOUNDS_MS.map((bound) => `count(*) FILTER (WHERE input.duration_ms <= ${bound})`).join(", ");
  const columns = ["delivered", "failed", "attempts", "failed_attempts", ...LATENCY_COLUMNS];
  return `counted_attempts AS (
    INSERT INTO wh_delivery_stats AS s (step, start, endpoint, writer, client_id, ${columns.join(", ")})
    SELECT steps.step, ${STEP_START("input.started_at")}, j.endpoint, ${writer}::text, min(j.client_id),
           count(*) FILTER (WHERE input.status = 'delivered'), count(*) FILTER (WHERE input.status = 'failed'),
           count(*), count(*) FILTER (WHERE NOT input.succeeded), ${latency}
    FROM input JOIN wh_delivery_jobs j ON j.id = input.notification_id CROSS JOIN ${STEPS}
    WHERE j.id = ANY ($1::text[])
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (step, start, endpoint, writer) DO UPDATE SET ${ADDED(columns)}
  )`;
}

const SUMS = ["accepted", "delivered", "failed", "attempts", "failed_attempts", ...LATENCY_COLUMNS]
  .map((column) => `sum(${column})::float8 AS ${column}`)
  .join(", ");

/** Every instance's rows of a step between $2 and $3, summed per step and endpoint; the second for client $4 alone. */
const CELLS = `SELECT start, endpoint, min(client_id) AS client_id, ${SUMS} FROM wh_delivery_stats
  WHERE step = $1 AND start >= $2 AND start < $3 GROUP BY start, endpoint`;
const CLIENT_CELLS = `SELECT start, endpoint, min(client_id) AS client_id, ${SUMS} FROM wh_delivery_stats
  WHERE client_id = $4 AND step = $1 AND start >= $2 AND start < $3 GROUP BY start, endpoint`;

type CellRow = { start: Date; endpoint: string; client_id: string; failed_attempts: number } & Record<string, number>;

export class PostgresDeliveryStatsStore implements DeliveryStatsStore {
  constructor(private readonly pool: SqlPool) {}

  async cells(query: StatsQuery): Promise<StatsCell[]> {
    const values: unknown[] = [STEP_SECONDS[query.step], query.from, query.to];
    const { rows } = await this.pool.query<CellRow>(
      query.clientId === undefined
        ? { name: "wh-stats-cells", text: CELLS, values }
        : { name: "wh-stats-client-cells", text: CLIENT_CELLS, values: [...values, query.clientId] },
    );
    return rows.map((row) => ({
      start: row.start,
      endpoint: row.endpoint,
      clientId: row.client_id,
      accepted: row.accepted ?? 0,
      delivered: row.delivered ?? 0,
      failed: row.failed ?? 0,
      attempts: row.attempts ?? 0,
      failedAttempts: row.failed_attempts,
      latencyAtMost: LATENCY_COLUMNS.map((column) => row[column] ?? 0),
    }));
  }

  async failing(clientId?: string): Promise<FailingSubscription[]> {
    const select = "SELECT client_id, url, failing_since FROM wh_subscriptions WHERE failing_since IS NOT NULL";
    const { rows } = await this.pool.query<{ client_id: string; url: string; failing_since: Date }>(
      clientId === undefined ? select : `${select} AND client_id = $1`,
      clientId === undefined ? [] : [clientId],
    );
    return rows.map((row) => ({ clientId: row.client_id, url: row.url, failingSince: row.failing_since }));
  }

  async pending(clientId?: string): Promise<number> {
    const { rows } = await this.pool.query<{ pending: number }>(
      clientId === undefined
        ? "SELECT count(*)::float8 AS pending FROM wh_delivery_jobs"
        : "SELECT count(*)::float8 AS pending FROM wh_delivery_jobs WHERE client_id = $1",
      clientId === undefined ? [] : [clientId],
    );
    return rows[0]?.pending ?? 0;
  }

  async purge(step: StatsStep, before: Date): Promise<number> {
    const { rowCount } = await this.pool.query("DELETE FROM wh_delivery_stats WHERE step = $1 AND start < $2", [
      STEP_SECONDS[step],
      before,
    ]);
    return rowCount ?? 0;
  }
}
