/**
 * `POSTGRES_URL=postgres://… node --import tsx bench/stats-query.ts`: how
 * long the delivery statistics take to read (GetDeliveryStats and
 * GetClientDeliveryStats, without the transport) with a week of 10 million
 * attempts in PostgreSQL. It makes a throwaway database, fills
 * wh_delivery_stats with the rows those attempts leave (the table the
 * reads use), merges the rows of the steps that are over as the service
 * does, reads each range 30 times through the service's own store code and
 * settings and encodes the answer's message as the API sends it, prints the wall-clock median and slowest and the CPU time each
 * read costs PostgreSQL's server process (from /proc, when the server runs
 * on this machine) and this process, and drops the database. On a busy
 * machine the wall clock measures the machine; the CPU times do not.
 *
 * The traffic: 10 million attempts and 8 million notifications over the
 * last 7 days, evenly over 200 endpoints (50 clients with 4 origins each)
 * and two instances, every minute of the last day and every hour of the
 * week busy (the most rows those attempts can make); 20 % of attempts fail.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { toBinary } from "@bufbuild/protobuf";
import pg from "pg";
import { toDeliveryStatsMessage } from "../src/api/services/stats-messages.js";
import { DeliveryStats, LATENCY_BOUNDS_MS, type StatsRange, stepStart } from "../src/domain/delivery-stats.js";
import { DeliveryStatsSchema } from "../src/gen/webhooks/v1/delivery_stats_pb.js";
import { STABLE_PLANS, withSettings } from "../src/store/open-store.js";
import { PostgresClientStore } from "../src/store/postgres/clients.js";
import { PostgresDeliveryStatsStore } from "../src/store/postgres/delivery-stats.js";
import { migrate } from "../src/store/postgres/schema.js";
import { median } from "./stats.js";

const ATTEMPTS = 10_000_000;
const CLIENTS = 50;
const ORIGINS_PER_CLIENT = 4;
const INSTANCES = 2;
const RUNS = 30;

const adminUrl = process.env.POSTGRES_URL;
if (!adminUrl) {
  console.error("set POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres): a throwaway database is made there");
  process.exit(2);
}

/** Fills one step's rows: every endpoint, instance and writer at every step from `from` to `to`, `attempts` to each attempts row. */
async function fill(pool: pg.Pool, step: number, from: Date, to: Date, attemptsPerRow: number): Promise<number> {
  // Attempts at most each bound: latencies spread as an exponential of mean 150 ms.
  const latency = LATENCY_BOUNDS_MS.map((bound) => `CASE WHEN w THEN round(a.n * (1 - exp(-${bound} / 150.0)))::bigint ELSE 0 END`);
  const { rowCount } = await pool.query(
    `INSERT INTO wh_delivery_stats (step, start, endpoint, writer, client_id, accepted, delivered, failed, attempts, failed_attempts,
       ${LATENCY_BOUNDS_MS.map((bound) => `le_${bound}`).join(", ")})
     SELECT $1, s.start, 'cli_' || c || ' https://receiver-' || o || '.example', 'instance-' || i || CASE WHEN w THEN ' attempts' ELSE ' accepts' END,
            'cli_' || c,
            CASE WHEN w THEN 0 ELSE round(a.n * 0.8) END, CASE WHEN w THEN round(a.n * 0.75) ELSE 0 END,
            CASE WHEN w THEN round(a.n * 0.05) ELSE 0 END, CASE WHEN w THEN a.n ELSE 0 END, CASE WHEN w THEN round(a.n * 0.2) ELSE 0 END
            , ${latency.join(", ")}
     FROM generate_series($2::timestamptz, $3::timestamptz - make_interval(secs => $1), make_interval(secs => $1)) AS s (start),
          generate_series(1, ${CLIENTS}) AS c, generate_series(1, ${ORIGINS_PER_CLIENT}) AS o, generate_series(1, ${INSTANCES}) AS i,
          (VALUES (true), (false)) AS writers (w), (SELECT $4::bigint AS n) AS a`,
    [step, from, to, attemptsPerRow],
  );
  return rowCount ?? 0;
}

/**
 * The CPU time (user and system) PostgreSQL's server process `pid` has used,
 * from /proc when the server runs on this machine: unlike the wall clock,
 * it does not grow with what else the machine runs.
 */
async function serverCpu(pid: number | undefined): Promise<() => number> {
  const path = `/proc/${pid}/stat`;
  if (pid === undefined || !existsSync(path)) return () => Number.NaN;
  const ticksPerMs = Number((await promisify(execFile)("getconf", ["CLK_TCK"])).stdout) / 1000;
  return () => {
    const fields = readFileSync(path, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) / ticksPerMs;
  };
}

const name = `wh_stats_bench_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const pool = new pg.Pool({ ...withSettings(url.toString(), STABLE_PLANS), max: 1 });
// Dropping the database ends the pool's last connections from the server's side.
pool.on("error", () => {});
try {
  await migrate(pool);
  const now = new Date();
  const hour = 3_600_000;
  const thisHour = Math.floor(now.getTime() / hour) * hour;
  const endpoints = CLIENTS * ORIGINS_PER_CLIENT;
  const hours = 7 * 24;
  const perHourRow = Math.round(ATTEMPTS / (hours * endpoints * INSTANCES));
  const perMinuteRow = Math.max(1, Math.round(perHourRow / 60));
  const hourRows = await fill(pool, 3600, new Date(thisHour - (hours - 1) * hour), new Date(thisHour + hour), perHourRow);
  const minuteRows = await fill(
    pool,
    60,
    new Date(thisHour - 23 * hour),
    new Date(stepStart(now, "minute").getTime() + 60_000),
    perMinuteRow,
  );
  // As the service keeps them: the rows of steps that are over merged into one per endpoint.
  const statsStore = new PostgresDeliveryStatsStore(pool);
  await statsStore.merge("minute", stepStart(now, "minute"));
  await statsStore.merge("hour", stepStart(now, "hour"));
  await pool.query("VACUUM ANALYZE wh_delivery_stats");
  const { rows: kept } = await pool.query<{ rows: number }>("SELECT count(*)::int AS rows FROM wh_delivery_stats");
  const { rows } = await pool.query<{ attempts: number }>(
    "SELECT sum(attempts)::float8 AS attempts FROM wh_delivery_stats WHERE step = 3600",
  );
  console.log(
    `${rows[0]?.attempts} attempts over ${endpoints} endpoints: ${hourRows} hour and ${minuteRows} minute rows written, ${kept[0]?.rows} once merged`,
  );

  const clients = new PostgresClientStore(pool);
  await pool.query("INSERT INTO wh_clients (id, name, created_at) VALUES ('cli_1', 'bench', now())");
  const stats = new DeliveryStats(statsStore, clients);
  // One connection: its server process is the one whose CPU time a read costs.
  const { rows: backend } = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  const serverCpuMs = await serverCpu(backend[0]?.pid);
  for (const [range, clientId] of [
    ["1h", undefined],
    ["24h", undefined],
    ["7d", undefined],
    ["7d", "cli_1"],
  ] as Array<[StatsRange, string | undefined]>) {
    await stats.report(range, clientId);
    const times: number[] = [];
    const serverBefore = serverCpuMs();
    const ownBefore = process.cpuUsage();
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      const report = await stats.report(range, clientId);
      toBinary(DeliveryStatsSchema, toDeliveryStatsMessage(report));
      times.push(performance.now() - started);
      if (run === 0 && report.endpoints.length !== (clientId ? ORIGINS_PER_CLIENT : endpoints)) throw new Error("wrong endpoints");
    }
    const own = process.cpuUsage(ownBefore);
    const server = serverCpuMs() - serverBefore;
    const who = clientId ? `client ${clientId}` : "every client";
    console.log(
      `${range.padEnd(3)} ${who.padEnd(12)} wall median ${median(times).toFixed(1)} ms (slowest ${Math.max(...times).toFixed(1)}); ` +
        `CPU per read: PostgreSQL ${(server / RUNS).toFixed(1)} ms, service ${((own.user + own.system) / 1000 / RUNS).toFixed(1)} ms`,
    );
  }
  console.log(
    `load average ${loadavg()
      .map((load) => load.toFixed(1))
      .join(" ")} on ${cpus().length} CPUs`,
  );
} finally {
  await pool.end();
  // BENCH_KEEP=1 keeps it, to look at the plans (drop it afterwards).
  if (process.env.BENCH_KEEP === "1") console.log(`kept database ${name}`);
  else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
