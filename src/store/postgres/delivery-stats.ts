import {
  type DeliveryStatsStore,
  type FailingSubscription,
  LATENCY_BOUNDS_MS,
  STEP_SECONDS,
  type StatsCounts,
  type StatsQuery,
  type StatsRead,
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

const COUNTS = ["accepted", "delivered", "failed", "attempts", "failed_attempts", ...LATENCY_COLUMNS];
const sums = (as: (column: string) => string) => COUNTS.map((column) => `sum(${column})${as(column)}`).join(", ");

/**
 * A range's rows ($1 step, from $2 to $3; the client's alone where `client`),
 * summed per step (rows with `start`) and per endpoint (rows with
 * `endpoint`, with the start, attempts and failed attempts of each of its
 * rows as arrays, for its attempts per step: one aggregate node feeds its
 * arrays the same rows in the same order, and without an ORDER BY it can
 * hash rather than sort). Sums are taken in float8: numeric sums of bigint
 * take ten times as long.
 */
export function readStatement(client: boolean): string {
  const range = `${client ? "client_id = $4 AND " : ""}step = $1 AND start >= $2 AND start < $3`;
  const floatSums = COUNTS.map((column) => `sum(${column}::float8) AS ${column}`).join(", ");
  return `
  SELECT start, NULL AS endpoint, NULL AS client_id, ${floatSums},
         NULL::float8[] AS step_starts, NULL::float8[] AS step_attempts, NULL::float8[] AS step_failed_attempts
  FROM wh_delivery_stats WHERE ${range} GROUP BY start
  UNION ALL
  SELECT NULL, endpoint, min(client_id), ${floatSums},
         array_agg(extract(epoch FROM start)::float8 * 1000), array_agg(attempts::float8), array_agg(failed_attempts::float8)
  FROM wh_delivery_stats WHERE ${range} GROUP BY endpoint`;
}

/**
 * Every writer's rows of the steps of $1 that started before $2 merged into
 * one of writer '' per step and endpoint. Each row is deleted once, by
 * whichever instance gets to it: two merging at once add each row once.
 */
const MERGE = `
  WITH taken AS (
    DELETE FROM wh_delivery_stats WHERE step = $1 AND start < $2 AND writer <> '' RETURNING *
  )
  INSERT INTO wh_delivery_stats AS s (step, start, endpoint, writer, client_id, ${COUNTS.join(", ")})
  SELECT step, start, endpoint, '', min(client_id), ${sums(() => "")}
  FROM taken GROUP BY step, start, endpoint ORDER BY step, start, endpoint
  ON CONFLICT (step, start, endpoint, writer) DO UPDATE SET ${ADDED(COUNTS)}`;

type ReadRow = { start: Date | null; endpoint: string | null; client_id: string | null; failed_attempts: number } & Record<
  string,
  number
> & { step_starts: number[] | null; step_attempts: number[] | null; step_failed_attempts: number[] | null };

function countsOf(row: ReadRow): StatsCounts {
  return {
    accepted: row.accepted ?? 0,
    delivered: row.delivered ?? 0,
    failed: row.failed ?? 0,
    attempts: row.attempts ?? 0,
    failedAttempts: row.failed_attempts ?? 0,
    latencyAtMost: LATENCY_COLUMNS.map((column) => row[column] ?? 0),
  };
}

export class PostgresDeliveryStatsStore implements DeliveryStatsStore {
  constructor(private readonly pool: SqlPool) {}

  async read(query: StatsQuery): Promise<StatsRead> {
    const values: unknown[] = [STEP_SECONDS[query.step], query.from, query.to];
    const { rows } = await this.pool.query<ReadRow>(
      query.clientId === undefined
        ? { name: "wh-stats-read", text: readStatement(false), values }
        : { name: "wh-stats-read-client", text: readStatement(true), values: [...values, query.clientId] },
    );
    const read: StatsRead = { steps: [], endpoints: [] };
    for (const row of rows) {
      if (row.start) read.steps.push({ start: row.start, ...countsOf(row) });
      else if (row.endpoint !== null && row.client_id !== null) {
        // A step not merged yet has a row per writer.
        const perStep = new Map<number, { start: Date; attempts: number; failedAttempts: number }>();
        for (const [i, ms] of (row.step_starts ?? []).entries()) {
          const step = perStep.get(ms) ?? { start: new Date(ms), attempts: 0, failedAttempts: 0 };
          step.attempts += row.step_attempts?.[i] ?? 0;
          step.failedAttempts += row.step_failed_attempts?.[i] ?? 0;
          perStep.set(ms, step);
        }
        read.endpoints.push({ endpoint: row.endpoint, clientId: row.client_id, ...countsOf(row), perStep: [...perStep.values()] });
      }
    }
    return read;
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

  async merge(step: StatsStep, before: Date): Promise<void> {
    await this.pool.query({ name: "wh-stats-merge", text: MERGE, values: [STEP_SECONDS[step], before] });
  }

  async purge(step: StatsStep, before: Date): Promise<number> {
    const { rowCount } = await this.pool.query("DELETE FROM wh_delivery_stats WHERE step = $1 AND start < $2", [
      STEP_SECONDS[step],
      before,
    ]);
    return rowCount ?? 0;
  }
}
