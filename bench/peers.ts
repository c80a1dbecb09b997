/**
 * `npm run bench -- --peers`: what teams build instead of the service
 * (bench/peers/: a graphile-worker task, a pg-boss worker, a BullMQ worker),
 * measured as (g-rest) measures the service, against the same receiver, the
 * same publisher code and the same ceiling loop, in the same run. Their
 * dependencies live in bench/peers/ and are installed there on first use,
 * never with the product. Each needs PostgreSQL (POSTGRES_URL); BullMQ also
 * needs Redis (127.0.0.1:6379, or PEER_REDIS_URL).
 */
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { PEERS } from "./peers-table.js";
import { ask, child, machineBusyMs, processCpuMs } from "./processes.js";
import { median, steadyRate, summarise } from "./stats.js";

interface Receipts {
  records: { subscription: string; at: number; latencyMs: number }[];
  unsigned: number;
}

export interface PeerRun {
  adminUrl: string;
  receiver: import("node:child_process").ChildProcess;
  receiverPort: number;
  /** The ceiling loop's rate now, the machine idle. */
  ceilingNow: (when: string) => Promise<number>;
  report: (row: { store: string; figure: string; value: number; unit: string; note?: string; key?: string }) => void;
  phase: (store: string, text: string) => void;
  size: { events: number; warmupEvents: number; segments: number; latencySeconds: number; repeats: number };
  publishers: number;
  /** Some of PEERS only. */
  only?: readonly string[];
}

const TOKEN = "bench-peer-token-0123456789";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Installs bench/peers' dependencies from its lock file, unless what is installed is as new as it. */
export function installPeers(): void {
  const dir = join(import.meta.dirname, "peers");
  const installed = join(dir, "node_modules", ".package-lock.json");
  if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(join(dir, "package-lock.json")).mtimeMs) return;
  console.error("  installing the peers' dependencies into bench/peers (once)");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
}

/** Measures each peer in turn, each on a database of its own, dropped after. */
export async function runPeers(run: PeerRun): Promise<void> {
  const admin = new pg.Client({ connectionString: run.adminUrl });
  await admin.connect();
  try {
    const unknown = run.only?.filter((name) => !(PEERS as readonly string[]).includes(name)) ?? [];
    if (unknown.length > 0) throw new Error(`--peers: no peer named ${unknown.join(", ")}; the peers are ${PEERS.join(", ")}`);
    for (const peer of PEERS.filter((name) => run.only?.includes(name) ?? true)) {
      const database = `wh_bench_peer_${peer.replace("-", "_")}_${Date.now()}`;
      await admin.query(`CREATE DATABASE ${database}`);
      try {
        const url = new URL(run.adminUrl);
        url.pathname = `/${database}`;
        const backendsCpuMs = async () => {
          const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [database]);
          const times = (await Promise.all(rows.map((row) => processCpuMs(row.pid)))).filter(Number.isFinite);
          return times.length === 0 ? Number.NaN : times.reduce((sum, ms) => sum + ms, 0);
        };
        await measurePeer(run, peer, url.toString(), backendsCpuMs);
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      }
    }
  } finally {
    await admin.end();
  }
}

async function measurePeer(run: PeerRun, peer: string, databaseUrl: string, databaseCpuMs: () => Promise<number>): Promise<void> {
  const { receiver, receiverPort, report, size } = run;
  const store = peer;
  run.phase(
    store,
    `(g-rest) as a ${peer} baseline: ${size.segments} × ${size.events} events × 1 subscription, ${run.publishers} REST calls in flight`,
  );
  const worker = await child(`peers/${peer}.ts`, { PEER_DATABASE_URL: databaseUrl, PEER_TOKEN: TOKEN });
  const publisher = await child("publisher.ts");
  const redisPid = peer === "bullmq" ? redisServerPid() : undefined;
  try {
    const port = worker.ready.port as number;
    const subscribe = async (tag: string, event: string) => {
      const path = `${tag}0`;
      const { publicKey } = await ask<{ publicKey: string }>(
        worker.process,
        { type: "subscribe", clientId: "cli_peer", event, url: `http://127.0.0.1:${receiverPort}/s/${path}` },
        "subscribed",
      );
      receiver.send({ type: "keys", keys: { [path]: publicKey } });
    };
    const publish = async (event: string, count: number, rate: number, concurrency: number) => {
      const done = await ask<{ notifications: number; errors: number; failure: string; durationMs: number }>(
        publisher.process,
        { type: "run", port, adminToken: TOKEN, clientId: "cli_peer", event, count, rate, concurrency, protocol: "rest" },
        "done",
      );
      if (done.errors > 0) console.error(`  ! ${done.errors} of ${count} publishes to ${peer} failed, the last with ${done.failure}`);
      return done;
    };
    const collect = async (expected: number, timeoutMs: number, tag: string): Promise<Receipts> => {
      const deadline = Date.now() + timeoutMs;
      let last: Receipts;
      do {
        await sleep(250);
        last = await ask<Receipts>(receiver, { type: "report" }, "report");
        last = { ...last, records: last.records.filter((record) => record.subscription.startsWith(tag)) };
      } while (last.records.length < expected && Date.now() < deadline);
      return last;
    };

    const tag = `p${peer.replace("-", "")}`;
    await subscribe(tag, "Bench.Peer");
    receiver.send({ type: "reset" });
    const warmup = await publish("Bench.Peer", size.warmupEvents, 0, run.publishers);
    await collect(warmup.notifications, 120_000, tag);
    const segments: Array<{ delivered: number; share: number; cpu: Record<string, number> }> = [];
    let lost = 0;
    let ceilingBefore = await run.ceilingNow(`before ${peer}`);
    for (let segment = 1; segment <= size.segments; segment++) {
      receiver.send({ type: "reset" });
      const pids = { peer: worker.process.pid, receiver: receiver.pid, publisher: publisher.process.pid, redis: redisPid };
      const before: Record<string, number> = { machine: await machineBusyMs(), database: await databaseCpuMs(), ...(await cpuOf(pids)) };
      const sent = await publish("Bench.Peer", size.events, 0, run.publishers);
      const got = await collect(sent.notifications, 600_000, tag);
      const after: Record<string, number> = { machine: await machineBusyMs(), database: await databaseCpuMs(), ...(await cpuOf(pids)) };
      const per = (key: string) => (((after[key] ?? Number.NaN) - (before[key] ?? Number.NaN)) * 1000) / got.records.length;
      lost += sent.notifications - got.records.length + got.unsigned;
      const delivered = steadyRate(got.records.map((record) => record.at));
      const ceilingAfter = await run.ceilingNow(`after ${peer} #${segment}`);
      segments.push({
        delivered,
        share: (100 * delivered) / ((ceilingBefore + ceilingAfter) / 2),
        cpu: {
          machine: per("machine"),
          peer: per("peer"),
          database: per("database"),
          receiver: per("receiver"),
          publisher: per("publisher"),
          redis: per("redis"),
        },
      });
      ceilingBefore = ceilingAfter;
    }
    const middle = (pick: (s: (typeof segments)[number]) => number) => {
      const values = segments.map(pick);
      return { value: median(values), ...(values.length > 1 ? { note: `median of ${values.length} segments` } : {}) };
    };
    report({ store, figure: "(g-rest) delivered notifications/s (steady)", ...middle((s) => s.delivered), unit: "/s" });
    report({ store, figure: "(g-rest) peer / ceiling (the ceilings around it)", ...middle((s) => s.share), unit: "%" });
    for (const [who, label] of [
      ["machine", "machine"],
      ["peer", "worker process"],
      ["database", "database server"],
      ["redis", "Redis server"],
      ["receiver", "receiver"],
      ["publisher", "publisher"],
    ] as const) {
      const value = middle((s) => s.cpu[who] ?? Number.NaN).value;
      if (Number.isFinite(value)) report({ store, figure: `(g-rest) ${label} CPU per notification`, value, unit: "µs" });
    }

    // (b)'s latency: publish→receipt at 200/s to one subscription.
    const latencyTag = `q${peer.replace("-", "")}`;
    await subscribe(latencyTag, "Bench.PeerLatency");
    const p99s: number[] = [];
    for (let repeat = 0; repeat < size.repeats; repeat++) {
      receiver.send({ type: "reset" });
      const sent = await publish("Bench.PeerLatency", 200 * size.latencySeconds, 200, 20);
      const { records } = await collect(sent.notifications, 60_000, latencyTag);
      p99s.push(summarise(records.map((record) => record.latencyMs)).p99);
      lost += sent.notifications - records.length;
    }
    report({
      store,
      figure: "(b) p99 publish→receipt at 200/s",
      value: median(p99s),
      unit: "ms",
      ...(p99s.length > 1 ? { note: `median of ${p99s.length}, ${Math.min(...p99s)}–${Math.max(...p99s)} ms` } : {}),
    });
    report({ store, figure: "lost / unsigned", value: lost, unit: "", key: "lost" });
  } finally {
    publisher.process.kill();
    const exited = new Promise((resolve) => worker.process.once("exit", resolve));
    // Disconnecting asks it to stop its queue (and remove BullMQ's keys) before it exits.
    worker.process.disconnect();
    await Promise.race([exited, sleep(15_000)]);
    worker.process.kill("SIGKILL");
  }
}

async function cpuOf(pids: Record<string, number | undefined>): Promise<Record<string, number>> {
  const entries = await Promise.all(
    Object.entries(pids).map(async ([who, pid]) => [who, pid === undefined ? Number.NaN : await processCpuMs(pid)] as const),
  );
  return Object.fromEntries(entries);
}

/** The local Redis server's process, for its CPU; undefined when there is none to read. */
function redisServerPid(): number | undefined {
  try {
    const pid = Number(execFileSync("pidof", ["redis-server"], { encoding: "utf8" }).trim().split(" ")[0]);
    return Number.isInteger(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}
