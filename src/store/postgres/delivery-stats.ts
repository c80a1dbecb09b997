import {
  type DeliveryStatsStore,
  type EndpointCounts,
  type FailingSubscription,
  LATENCY_BOUNDS_MS,
  STEP_SECONDS,
  type StatsCounts,
  type StatsQuery,
  type StatsRead,
  type StatsStep,
  stepsOf,
} from "../../domain/delivery-stats.js";
import type { SqlPool } from "./sql-pool.js";

/**
 * Delivery statistics in `wh_delivery_stats` (made by a migration,
 * schema.ts). The job store's statements count as they write
 * (job-statements.ts, through the CTEs below); this reads, merges and
 * purges.
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
 * `endpoint`: the sums its health needs, and `per_step`, each of its rows'
 * place in the range (0 for the first step), attempts and failed attempts,
 * as the text of a JSON array: JSON.parse reads it several times faster
 * than the driver parses arrays of numbers, or than text split and
 * converted). Sums are taken in float8: numeric sums of bigint take ten
 * times as long.
 */
function readStatement(client: boolean): string {
  const range = `${client ? "client_id = $4 AND " : ""}step = $1 AND start >= $2 AND start < $3`;
  const sumsOf = (columns: readonly string[]) =>
    COUNTS.map((column) => `${columns.includes(column) ? `sum(${column}::float8)` : "NULL::float8"} AS ${column}`).join(", ");
  return `
  SELECT start, NULL AS endpoint, NULL AS client_id, ${sumsOf(COUNTS)},
         NULL AS per_step
  FROM wh_delivery_stats WHERE ${range} GROUP BY start
  UNION ALL
  SELECT NULL, endpoint, min(client_id), ${sumsOf(["attempts", "failed_attempts", ...LATENCY_COLUMNS])},
         '[' || string_agg(concat_ws(',', ((date_part('epoch', start) - date_part('epoch', $2::timestamptz)) / $1)::int,
                                     attempts, failed_attempts), ',') || ']'
  FROM wh_delivery_stats WHERE ${range} GROUP BY endpoint`;
}

/**
 * Every writer's rows of the steps of $1 that started before $2 merged into
 * one of writer '' per step and endpoint. Each row is deleted once, by
 * whichever instance gets to it: two merging at once add each row once.
 * Rows are locked in key order, as the writers lock theirs, so that a
 * merge and a late writer never wait on each other in a circle.
 */
const MERGE = `
  WITH doomed AS MATERIALIZED (
    SELECT step, start, endpoint, writer FROM wh_delivery_stats WHERE step = $1 AND start < $2 AND writer <> ''
    ORDER BY step, start, endpoint, writer FOR UPDATE
  ), taken AS (
    DELETE FROM wh_delivery_stats AS s USING doomed AS d
    WHERE s.step = d.step AND s.start = d.start AND s.endpoint = d.endpoint AND s.writer = d.writer
    RETURNING s.*
  )
  INSERT INTO wh_delivery_stats AS s (step, start, endpoint, writer, client_id, ${COUNTS.join(", ")})
  SELECT step, start, endpoint, '', min(client_id), ${sums(() => "")}
  FROM taken GROUP BY step, start, endpoint ORDER BY step, start, endpoint
  ON CONFLICT (step, start, endpoint, writer) DO UPDATE SET ${ADDED(COUNTS)}`;

/** The subscriptions in a failure streak, through their partial index. */
const FAILING = "SELECT client_id, url, failing_since FROM wh_subscriptions WHERE failing_since IS NOT NULL";

/**
 * The jobs left (each a notification pending), unlocked and locked, each
 * count through the job table's partial index for it (job-statements.ts'
 * COUNT_JOBS): a plain count(*) would read the whole table.
 */
const PENDING = (and: string) => `
  SELECT ((SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NULL AND next_run_at IS NOT NULL${and})
        + (SELECT count(*) FROM wh_delivery_jobs WHERE locked_at IS NOT NULL${and}))::float8 AS pending`;

type ReadRow = { start: Date | null; endpoint: string | null; client_id: string | null; per_step: string | null } & Record<string, number>;

/** An endpoint's `per_step` text spread over the range's `steps`, its rows of one step (one per writer until merged) added together. */
function perStepOf(text: string, steps: number): Pick<EndpointCounts, "attemptsPerStep" | "failedAttemptsPerStep"> {
  const attemptsPerStep = new Array<number>(steps).fill(0);
  const failedAttemptsPerStep = new Array<number>(steps).fill(0);
  const figures = JSON.parse(text) as number[];
  for (let i = 0; i < figures.length; i += 3) {
    const step = figures[i] as number;
    attemptsPerStep[step] = (attemptsPerStep[step] as number) + (figures[i + 1] as number);
    failedAttemptsPerStep[step] = (failedAttemptsPerStep[step] as number) + (figures[i + 2] as number);
  }
  return { attemptsPerStep, failedAttemptsPerStep };
}

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
    const steps = stepsOf(query);
    for (const row of rows) {
      if (row.start !== null) read.steps.push({ start: row.start, ...countsOf(row) });
      else if (row.endpoint !== null && row.client_id !== null) {
        const { attempts, failedAttempts, latencyAtMost } = countsOf(row);
        const perStep = perStepOf(row.per_step ?? "[]", steps);
        read.endpoints.push({ endpoint: row.endpoint, clientId: row.client_id, attempts, failedAttempts, latencyAtMost, ...perStep });
      }
    }
    return read;
  }

  async failing(clientId?: string): Promise<FailingSubscription[]> {
    const { rows } = await this.pool.query<{ client_id: string; url: string; failing_since: Date }>(
      clientId === undefined
        ? { name: "wh-stats-failing", text: FAILING, values: [] }
        : { name: "wh-stats-client-failing", text: `${FAILING} AND client_id = $1`, values: [clientId] },
    );
    return rows.map((row) => ({ clientId: row.client_id, url: row.url, failingSince: row.failing_since }));
  }

  async pending(clientId?: string): Promise<number> {
    const { rows } = await this.pool.query<{ pending: number }>(
      clientId === undefined
        ? { name: "wh-stats-pending", text: PENDING(""), values: [] }
        : { name: "wh-stats-client-pending", text: PENDING(" AND client_id = $1"), values: [clientId] },
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
