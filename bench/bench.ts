/**
 * `npm run bench [-- --quick] [-- --json]`: throughput, latency (idle and
 * with one core busy), a retry storm, latency at 1 000 events/s, fairness
 * next to a hung endpoint, and a backlog, for each available store, next to
 * the machine's ceiling (a bare sign-and-POST loop to the same receiver).
 * The backlog scenario also times GET /metrics with the backlog pending;
 * BENCH_METRICS=off runs the service with metrics off, to compare.
 * Throughput and the ceiling are measured again with Standard Webhooks'
 * Ed25519 signatures (`a-ed25519`), and the two schemes' costs are shown
 * side by side.
 * Ends with one line per target, met (✓) or not (✗); `--json` prints every
 * figure and verdict on stdout. Progress goes to stderr as it runs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Agent } from "undici";
import { signBody } from "../src/domain/signature.js";
import { generateEd25519KeyPair, standardWebhooksHeaders } from "../src/domain/standard-webhooks.js";
import { type GcPauses, gcPausesBetween, gcPausesOf } from "./gc-pauses.js";
import { ONE_SUBSCRIBER, ONE_SUBSCRIBER_PUBLISHERS } from "./one-subscriber.js";
import { installPeers, runPeers } from "./peers.js";
import { aheadOfPeers, peersTable } from "./peers-table.js";
import { ask, child, freePort, machineBusyMs, processCpuMs, tracked } from "./processes.js";
import type { Protocol } from "./publisher.js";
import { SCHEMES, type Scheme, type SchemeFigures, schemeTable } from "./schemes.js";
import { median, slowest, steadyRate, summarise } from "./stats.js";
import { type Figure, summary, verdicts } from "./targets.js";

const quick = process.argv.includes("--quick");
/**
 * `--only=a` runs the throughput scenario alone (for profiling); `a-ed25519` (the same with Ed25519
 * subscriptions), `b`, `c`, `d`, `e`, `f`, `r` (retention) or `g` (one subscription per event; `g-rest`,
 * `g-grpc`, `g-connect`, `g-batch` one protocol of it) another one; `--only=a,a-ed25519` several.
 */
const only = process.argv
  .find((a) => a.startsWith("--only="))
  ?.slice(7)
  .split(",");
const runs = (scenario: string) => only === undefined || only.includes(scenario);
const asJson = process.argv.includes("--json");
/** `--peers` also measures what teams build instead (bench/peers.ts), after the stores; `--peers=bullmq,pg-boss` some of them. */
const peersArgument = process.argv.find((a) => a === "--peers" || a.startsWith("--peers="));
const withPeers = peersArgument !== undefined;
/** `--store=postgres` runs one store only. */
const onlyStore = process.argv.find((a) => a.startsWith("--store="))?.slice(8);
/** BENCH_METRICS=off runs the service with METRICS_ENABLED=false, to compare a run with metrics and one without. */
const metricsOn = process.env.BENCH_METRICS !== "off";
const ADMIN = "bench-admin-token-0123456789";
/** The service build the bench runs, as `npm start` does (`node dist/main.js`); BENCH_SERVICE: another one, to compare builds in turn. */
const SERVICE_ENTRY = process.env.BENCH_SERVICE ?? "dist/main.js";
const MASTER = "ab".repeat(32);
/** Publish calls in flight at once in (a) and its warm-up (BENCH_PUBLISHERS overrides it, for diagnosis). */
const THROUGHPUT_PUBLISHERS = Number(process.env.BENCH_PUBLISHERS ?? 64);
// BENCH_EVENTS overrides the events of each of the throughput scenario's segments (for profiling).
// Latency phases are repeated (`repeats` × `latencySeconds`, after `latencyWarmupSeconds` not timed): the median of
// their p99s is reported, with the spread.
const SIZE_BASE = quick
  ? {
      ceiling: 3000,
      warmupEvents: 50,
      events: 200,
      throughputSegments: 1,
      fanOut: 10,
      latencySeconds: 2,
      latencyWarmupSeconds: 1,
      repeats: 1,
      stormSeconds: 2,
      backlog: 5_000,
      backlogFanOut: 20,
    }
  : {
      ceiling: 10_000,
      warmupEvents: 2000,
      events: 2000,
      throughputSegments: 3,
      fanOut: 10,
      latencySeconds: 10,
      latencyWarmupSeconds: 3,
      repeats: 3,
      stormSeconds: 20,
      backlog: 100_000,
      backlogFanOut: 100,
    };
const SIZE = { ...SIZE_BASE, events: Number(process.env.BENCH_EVENTS ?? SIZE_BASE.events) };

type Row = Figure & { note?: string };
const rows: Row[] = [];
/** Throughput and ceiling per signature scheme, for the side-by-side table. */
const schemeFigures: SchemeFigures[] = [];
const started = Date.now();
/** One line on stderr per phase, so a long run is not silent. */
const phase = (store: string, text: string) =>
  console.error(`  ▸ ${store.padEnd(9)} ${text} (${Math.round((Date.now() - started) / 1000)} s into the run)`);
const report = (row: Row) => {
  rows.push(row);
  if (!asJson)
    console.error(
      `  ${row.store.padEnd(9)} ${row.figure.padEnd(52)} ${fmt(row.value).padStart(10)} ${row.unit.padEnd(8)} ${row.note ?? ""}`,
    );
};
const fmt = (n: number) => (Number.isFinite(n) ? (n >= 100 ? Math.round(n).toString() : n.toFixed(1)) : "n/a");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function json(base: string, method: string, path: string, body: unknown, token: string) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const data = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(data)}`);
  return data;
}

interface ReceiverReport {
  records: { subscription: string; at: number; latencyMs: number }[];
  unsigned: number;
  requests: number;
}

/** The headers of one delivery, signed as the service signs them in `scheme`, and the receiver's key for them. */
async function ceilingSigner(
  scheme: Scheme,
): Promise<{ publicKey: string; sign: (body: string, jobId: string) => Promise<Record<string, string>> }> {
  if (scheme.signatureScheme === "STANDARD_WEBHOOKS_ED25519") {
    const { publicKey, privateKeyPem } = await generateEd25519KeyPair();
    const key = createPrivateKey(privateKeyPem);
    return {
      publicKey,
      // On the main thread, as the service signs Ed25519: it costs less than a trip to the thread pool.
      sign: async (body, jobId) => ({
        ...standardWebhooksHeaders([key], jobId, Math.floor(Date.now() / 1000), body),
        "X-JobAttempt": "0",
      }),
    };
  }
  const { publicKey, privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  const key = createPrivateKey(privateKey);
  return {
    publicKey,
    // On the thread pool, as the service signs RSA.
    sign: async (body, jobId) => ({ "X-Signature": await signBody(body, key), "X-JobId": jobId, "X-JobAttempt": "0" }),
  };
}

/** The ceiling: sign (in `scheme`) and POST the same kind of body, no store, no scheduler. */
async function ceiling(receiver: ChildProcess, receiverPort: number, scheme: Scheme): Promise<{ rate: number; cpuMs: number }> {
  const signer = await ceilingSigner(scheme);
  const path = scheme.ceilingPath;
  receiver.send({ type: "keys", keys: { [path]: signer.publicKey } });
  receiver.send({ type: "reset" });
  const agent = new Agent({ connections: 64 });
  const run = async (count: number) => {
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const seq = next++;
        const body = JSON.stringify({ Event: "Bench.Tick", Timestamp: new Date().toISOString(), SentAt: Date.now(), Seq: seq });
        const response = await agent.request({
          origin: `http://127.0.0.1:${receiverPort}`,
          path: `/s/${path}`,
          method: "POST",
          headers: { "content-type": "application/json", ...(await signer.sign(body, `c${seq}`)) },
          body,
        });
        await response.body.dump();
        // A refused signature answers fast: counted, it would inflate the ceiling unnoticed.
        if (response.statusCode !== 200) throw new Error(`the receiver answered the ceiling loop ${response.statusCode}`);
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
  };
  // Warmed up first (JIT, connections), as the service is by the time it is measured.
  await run(Math.min(2000, SIZE.ceiling));
  const started = performance.now();
  const cpuBefore = await machineBusyMs();
  await run(SIZE.ceiling);
  const rate = (SIZE.ceiling * 1000) / (performance.now() - started);
  const cpuMs = ((await machineBusyMs()) - cpuBefore) / SIZE.ceiling;
  await agent.close();
  return { rate, cpuMs };
}

function printTimeline(offsetsMs: readonly number[], publishMs: number): void {
  const perSecond: number[] = [];
  for (const offset of offsetsMs) {
    const second = Math.max(0, Math.floor(offset / 1000));
    perSecond[second] = (perSecond[second] ?? 0) + 1;
  }
  const marks = Array.from(perSecond, (n, second) => `${second}s:${n ?? 0}${second === Math.floor(publishMs / 1000) ? "|" : ""}`);
  console.error(`  timeline (deliveries per second; | = publishing ended): ${marks.join(" ")}`);
}

/**
 * Waits (up to 15 s) until the machine is quiet: under a tenth of a core
 * busy over a quarter second. What a scenario leaves behind (the service's
 * last writes, PostgreSQL's vacuum of the rows it churned) would otherwise
 * run during the next ceiling run and slow it.
 */
async function settle(): Promise<void> {
  const deadline = Date.now() + 15_000;
  let before = await machineBusyMs();
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await machineBusyMs();
    if (!(now - before > 25)) return;
    before = now;
  }
  if (!asJson) console.error("  (the machine did not go quiet within 15 s: the ceiling runs beside whatever keeps it busy)");
}

/**
 * The service's main thread since `since` (from `mainThreadSince`): the share of the wall clock it
 * ran on a CPU and the share it was ready to run but waited for one (Linux's schedstat; empty where
 * there is none). A thread that waits a large share is queueing for the machine's cores, not busy.
 */
async function mainThreadSince(pid: number | undefined, since?: { at: number; run: number; wait: number }) {
  const [run = Number.NaN, wait = Number.NaN] = (await readFile(`/proc/${pid}/schedstat`, "utf8").catch(() => "")).split(" ").map(Number);
  const now = { at: performance.now(), run: run / 1e6, wait: wait / 1e6 };
  if (!since || Number.isNaN(run)) return { now, text: "" };
  const wall = now.at - since.at;
  const share = (ms: number) => Math.round((100 * ms) / wall);
  return { now, text: `; main thread on a CPU ${share(now.run - since.run)} %, waiting for one ${share(now.wait - since.wait)} %` };
}

/** The bytes of the files under `path`; with `withoutWal`, those of the write-ahead log (`pg_wal`) left out. */
async function directorySize(path: string, withoutWal = false): Promise<number> {
  let total = 0;
  for (const entry of await readdir(path, { withFileTypes: true, recursive: true })) {
    if (withoutWal && entry.parentPath.split("/").includes("pg_wal")) continue;
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

async function rss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

async function runStore(
  store: string,
  env: Record<string, string>,
  /** The store's bytes; `withoutWal`: its tables and indexes alone (PostgreSQL's figure never counts its log). */
  storeSize: (withoutWal?: boolean) => Promise<number>,
  /** CPU time the store's server processes serving this run used (PostgreSQL's backends); NaN when the store runs in the service. */
  storeCpuMs: () => Promise<number>,
  receiver: ChildProcess,
  receiverPort: number,
  /** Measures `scheme`'s ceiling now (the service idle): (a) is bracketed by it. */
  ceilingNow: (scheme: Scheme, when: string) => Promise<number>,
) {
  const port = await freePort();
  // BENCH_CPU_PROFILE=dir writes the service's V8 CPU profile there (node --cpu-prof).
  const profile = process.env.BENCH_CPU_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
  // BENCH_NODE_ARGS: flags for the service's node alone, including V8 flags NODE_OPTIONS refuses.
  // BENCH_SERVICE: another build's entry point (e.g. a copy of dist/ from an earlier commit), to compare builds in turn.
  const service = tracked(
    spawn(process.execPath, [...profile, ...(process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? []), SERVICE_ENTRY], {
      env: {
        ...process.env,
        // Read by the tests and this bench alone; the service refuses it.
        POSTGRES_URL: undefined,
        ...env,
        // BENCH_NODE_OPTIONS: node options for the service alone (e.g. --import a probe).
        ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
        PORT: String(port),
        HOST: "127.0.0.1",
        ADMIN_TOKEN: ADMIN,
        SIGNING_MASTER_KEY: MASTER,
        ALLOW_PRIVATE_TARGETS: "true",
        ALLOW_HTTP_TARGETS: "true",
        RETRY_SCHEDULE: "1s,2s,4s,8s,16s",
        RATE_LIMIT_PER_SECOND: "0",
        // The bench's one client subscribes far more than a client may by default.
        MAX_SUBSCRIPTIONS_PER_CLIENT: "1000000",
        LOG_LEVEL: "warn",
        // The backlog scenario leaves requests hanging on purpose: don't wait for them at the end.
        SHUTDOWN_GRACE_MS: "1000",
        METRICS_ENABLED: String(metricsOn),
      },
      // BENCH_SERVICE_STDOUT=1 shows the service's stdout (e.g. with BENCH_NODE_ARGS=--trace-gc).
      stdio: ["ignore", process.env.BENCH_SERVICE_STDOUT === "1" ? "inherit" : "ignore", "inherit"],
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(`${base}/healthz`).catch(() => undefined))?.ok) break;
      if (i > 600) throw new Error("service did not start");
      await sleep(100);
    }
    const created = await json(base, "POST", "/api/internal/clients", { name: "bench" }, ADMIN);
    const clientId = (created.client as { id: string }).id;
    const key = (created.apiKey as { key: string }).key;
    const subscribe = async (
      event: string,
      count: number,
      tag: string,
      { apiKey = key, signatureScheme = "RSA_SHA256" }: { apiKey?: string; signatureScheme?: Scheme["signatureScheme"] } = {},
    ) => {
      await json(base, "POST", "/api/internal/eventTypes", { name: event, description: "benchmark" }, ADMIN);
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const path = `${tag}${i}`;
        const sub = await json(
          base,
          "POST",
          "/api/webhookSubscription",
          // The default is left out: an earlier build (BENCH_SERVICE) may not know the field.
          {
            event,
            url: `http://127.0.0.1:${receiverPort}/s/${path}`,
            ...(signatureScheme === "RSA_SHA256" ? {} : { signatureScheme }),
          },
          apiKey,
        );
        const signatureKey = sub.signatureKey as string;
        // A build that ignored the scheme would hand back an RSA key, and its figures would pass for Ed25519's.
        if (signatureScheme === "STANDARD_WEBHOOKS_ED25519" && !signatureKey.startsWith("whpk_")) {
          throw new Error(`the service did not create an Ed25519 subscription (key ${signatureKey.slice(0, 12)}…)`);
        }
        receiver.send({ type: "keys", keys: { [path]: signatureKey } });
        ids.push(path);
      }
      return ids;
    };
    const publisher = await child("publisher.ts");
    const publish = async (
      event: string,
      count: number,
      rate: number,
      concurrency: number,
      forClient = clientId,
      how: { protocol?: Protocol; batch?: number } = {},
    ) => {
      const done = await ask<{ notifications: number; errors: number; failure: string; durationMs: number }>(
        publisher.process,
        { type: "run", port, adminToken: ADMIN, clientId: forClient, event, count, rate, concurrency, ...how },
        "done",
      );
      // A refused publish makes no notification, so it is not lost; but a scenario that publishes
      // fewer events than it meant to does not measure what it says.
      if (done.errors > 0) console.error(`  ! ${done.errors} of ${count} publishes of ${event} failed, the last with ${done.failure}`);
      return done;
    };
    /**
     * The receipts of this scenario's subscriptions (their paths start with `tag`), once `expected`
     * arrived or `timeoutMs` passed: an earlier scenario's retries still arriving are not its own.
     */
    const collect = async (expected: number, timeoutMs: number, tag: string) => {
      const deadline = Date.now() + timeoutMs;
      let last: ReceiverReport;
      do {
        await sleep(250);
        last = await ask<ReceiverReport>(receiver, { type: "report" }, "report");
        last = { ...last, records: last.records.filter((record) => record.subscription.startsWith(tag)) };
      } while (last.records.length < expected && Date.now() < deadline);
      return last;
    };

    /** The service's GC pauses so far, for a phase's detail line; undefined with metrics off, or details not asked for. */
    const gcPausesNow = async (): Promise<GcPauses | undefined> =>
      metricsOn && process.env.BENCH_LATENCY_DETAIL ? gcPausesOf(await (await fetch(`${base}/metrics`)).text()) : undefined;

    /** Waits (up to 60 s) until the service has nothing pending, as /metrics says (with metrics off, it cannot tell). */
    const drained = async () => {
      if (!metricsOn) return;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        if (metricOf(await (await fetch(`${base}/metrics`)).text(), "webhook_queue_pending") === "0") return;
        await sleep(250);
      }
      if (!asJson) console.error("  (notifications were still pending after 60 s: the next scenario runs beside them)");
    };

    /**
     * `SIZE.latencyWarmupSeconds` of `event` at `rate`/s, delivered and checked but not timed, before a
     * latency scenario's phases; answers how many of them were lost.
     */
    const warmUp = async (event: string, tag: string, rate: number, concurrency: number) => {
      receiver.send({ type: "reset" });
      const warmup = await publish(event, rate * SIZE.latencyWarmupSeconds, rate, concurrency);
      return warmup.notifications - (await collect(warmup.notifications, 60_000, tag)).records.length;
    };

    /**
     * p99 publish→receipt at `rate`/s to one subscription, over `SIZE.repeats` phases of
     * `SIZE.latencySeconds`: the median of the phases' p99s, their spread, and what was lost.
     */
    const latency = async (event: string, tag: string, rate: number) => {
      await subscribe(event, 1, tag);
      const p99s: number[] = [];
      let p50 = Number.NaN;
      // Warm-up, as (a) has one: the phases measure the service once this event's code paths are
      // compiled, not V8 compiling them.
      let lost = await warmUp(event, tag, rate, Math.max(16, rate / 10));
      for (let repeat = 0; repeat < SIZE.repeats; repeat++) {
        receiver.send({ type: "reset" });
        // Read before the phase's CPU starts counting: the service's answer to it is not the phase's work.
        const gcBefore = await gcPausesNow();
        const cpuBefore = await processCpuMs(service.pid);
        const mainBefore = (await mainThreadSince(service.pid)).now;
        const machineBefore = { busyMs: await machineBusyMs(), at: performance.now() };
        const sent = await publish(event, rate * SIZE.latencySeconds, rate, Math.max(16, rate / 10));
        const { records } = await collect(sent.notifications, 60_000, tag);
        const got = summarise(records.map((r) => r.latencyMs));
        // BENCH_LATENCY_DETAIL=1 prints each phase's distribution, the service's CPU per event, how its main thread spent the phase, its GC pauses and when the slowest arrived (for diagnosis).
        if (process.env.BENCH_LATENCY_DETAIL) {
          const cpu = (((await processCpuMs(service.pid)) - cpuBefore) * 1000) / got.count;
          const main = (await mainThreadSince(service.pid, mainBefore)).text;
          // The whole machine's CPUs, busy with every process on it (the bench's own included).
          const busy = ((await machineBusyMs()) - machineBefore.busyMs) / ((performance.now() - machineBefore.at) * cpus().length);
          const gcAfter = await gcPausesNow();
          const gc = gcBefore && gcAfter ? `; ${gcPausesBetween(gcBefore, gcAfter)}` : "";
          console.error(
            `  ${tag} phase ${repeat + 1}: p50 ${got.p50} p95 ${got.p95} p99 ${got.p99} max ${got.max} ms (${got.count}); service CPU ${Math.round(cpu)} µs per event${main}; machine ${Math.round(busy * 100)} % busy${gc}; ${slowest(records)}`,
          );
        }
        p99s.push(got.p99);
        p50 = got.p50;
        lost += sent.notifications - got.count;
      }
      return {
        p99: median(p99s),
        spread: p99s.length > 1 ? `median of ${p99s.length}, ${Math.min(...p99s)}–${Math.max(...p99s)} ms` : "",
        p50,
        lost,
      };
    };

    /**
     * Throughput: (a) with `scheme`'s subscriptions (its `scenario` names its figures), or (g) with
     * one subscription; in SIZE.throughputSegments segments, each between two runs of the ceiling
     * loop: its share is of the mean of those two, taken seconds apart, not minutes (a shared
     * machine's speed drifts by 10-20 % over minutes). The figures are the segments' median, with
     * their range.
     */
    const throughput = async (run: {
      scheme: Scheme;
      name: string;
      event: string;
      tag: string;
      subscriptions: number;
      events: number;
      publishers: number;
      how?: { protocol?: Protocol; batch?: number };
      /** The target its share of the ceiling is checked against, if any. */
      key?: string;
    }) => {
      const { scheme, name, event, tag, subscriptions, events, publishers, how = {} } = run;
      const segments = SIZE.throughputSegments;
      const over = how.protocol ? ` over ${how.protocol}${(how.batch ?? 1) > 1 ? `, ${how.batch} events a call` : ""}` : "";
      phase(
        store,
        `(${name}) throughput: ${segments} × ${events} events × ${subscriptions} ${scheme.name} subscription${subscriptions === 1 ? "" : "s"}${over}, ${publishers} calls in flight, each segment between two ceiling runs`,
      );
      await subscribe(event, subscriptions, tag, { signatureScheme: scheme.signatureScheme });
      // Warm-up, as the ceiling's loop has one: the same publishes and deliveries, not counted,
      // so that the segments measure the service once its code is compiled, not V8 compiling it.
      receiver.send({ type: "reset" });
      const warmup = await publish(event, SIZE.warmupEvents, 0, publishers, clientId, how);
      await collect(warmup.notifications, 60_000, tag);
      const measured: Array<{
        delivered: number;
        share: number;
        accepted: number;
        cpu: { machine: number; service: number; receiver: number; publisher: number; store: number };
      }> = [];
      let lost = 0;
      let received = 0;
      let ceilingBefore = await ceilingNow(scheme, `${store}, before (${name})`);
      for (let segment = 1; segment <= segments; segment++) {
        receiver.send({ type: "reset" });
        const publishStarted = Date.now();
        const cpuBefore = await machineBusyMs();
        const serviceCpuBefore = await processCpuMs(service.pid);
        const receiverCpuBefore = await processCpuMs(receiver.pid);
        const publisherCpuBefore = await processCpuMs(publisher.process.pid);
        const storeCpuBefore = await storeCpuMs();
        const sent = await publish(event, events, 0, publishers, clientId, how);
        const a = await collect(sent.notifications, 300_000, tag);
        const per = (ms: number) => (ms * 1000) / a.records.length;
        const cpu = {
          machine: per((await machineBusyMs()) - cpuBefore),
          service: per((await processCpuMs(service.pid)) - serviceCpuBefore),
          receiver: per((await processCpuMs(receiver.pid)) - receiverCpuBefore),
          publisher: per((await processCpuMs(publisher.process.pid)) - publisherCpuBefore),
          store: per((await storeCpuMs()) - storeCpuBefore),
        };
        // BENCH_TIMELINE=1 prints deliveries per second, marking where publishing ended (for profiling).
        if (process.env.BENCH_TIMELINE)
          printTimeline(
            a.records.map((r) => r.at - publishStarted),
            sent.durationMs,
          );
        lost += sent.notifications - a.records.length + a.unsigned;
        received += a.records.length;
        const delivered = steadyRate(a.records.map((r) => r.at));
        const ceilingAfter = await ceilingNow(scheme, `${store}, after (${name}) #${segment}`);
        measured.push({
          delivered,
          share: (100 * delivered) / ((ceilingBefore + ceilingAfter) / 2),
          accepted: (sent.notifications * 1000) / sent.durationMs,
          cpu,
        });
        ceilingBefore = ceilingAfter;
      }
      const middle = (pick: (m: (typeof measured)[number]) => number) => {
        const values = measured.map(pick);
        return {
          value: median(values),
          note: values.length > 1 ? `median of ${values.length} segments: ${values.map((v) => fmt(v)).join(", ")}` : "",
        };
      };
      const delivered = middle((m) => m.delivered);
      const share = middle((m) => m.share);
      report({ store, figure: `(${name}) delivered notifications/s (steady)`, ...delivered, unit: "/s" });
      report({ store, figure: `(${name}) accepted notifications/s (publish side)`, ...middle((m) => m.accepted), unit: "/s" });
      const machineCpu = middle((m) => m.cpu.machine).value;
      const serviceCpu = middle((m) => m.cpu.service).value;
      const receiverCpu = middle((m) => m.cpu.receiver).value;
      const publisherCpu = middle((m) => m.cpu.publisher).value;
      const storeCpu = middle((m) => m.cpu.store).value;
      report({ store, figure: `(${name}) machine CPU per notification`, value: machineCpu, unit: "µs" });
      report({ store, figure: `(${name}) service process CPU per notification`, value: serviceCpu, unit: "µs" });
      if (Number.isFinite(storeCpu))
        report({ store, figure: `(${name}) database server CPU per notification`, value: storeCpu, unit: "µs" });
      report({ store, figure: `(${name}) receiver CPU per notification`, value: receiverCpu, unit: "µs" });
      report({ store, figure: `(${name}) publisher CPU per notification`, value: publisherCpu, unit: "µs" });
      report({ store, figure: `(${name}) lost / unsigned`, value: lost, unit: "", key: "lost" });
      rows.push({ store, figure: `(${name}) delivered notifications`, value: received, unit: "" });
      report({
        store,
        figure: `(${name}) service / ceiling (the ceilings around it)`,
        ...share,
        unit: "%",
        ...(run.key ? { key: run.key } : {}),
      });
      rows.push({ store, figure: `(${name}) ratio to ceiling`, value: share.value / 100, unit: "" });
      // The schemes' table compares (a) and (a-ed25519) alone.
      if (subscriptions === SIZE.fanOut)
        schemeFigures.push({
          store,
          scheme: scheme.name,
          deliveredPerSecond: delivered.value,
          shareOfCeilingPercent: share.value,
          cpuPerNotificationMicros: {
            service: serviceCpu,
            ...(Number.isFinite(storeCpu) ? { database: storeCpu } : {}),
            receiver: receiverCpu,
            machine: machineCpu,
          },
        });
    };
    for (const scheme of SCHEMES)
      if (runs(scheme.scenario))
        await throughput({
          scheme,
          name: scheme.scenario,
          event: scheme.event,
          tag: scheme.tag,
          subscriptions: SIZE.fanOut,
          events: SIZE.events,
          publishers: THROUGHPUT_PUBLISHERS,
          // Only RSA's share has a target: the contract's scheme is what every subscription gets by default.
          ...(scheme.signatureScheme === "RSA_SHA256" ? { key: "a.ratio" } : {}),
        });
    // (g): as many notifications as (a), each event to one subscription, so a publish is not shared ten ways.
    const rsa = SCHEMES.find((scheme) => scheme.signatureScheme === "RSA_SHA256") as Scheme;
    for (const variant of ONE_SUBSCRIBER)
      if (runs(variant.scenario) || runs("g"))
        await throughput({
          scheme: rsa,
          name: variant.scenario,
          event: variant.event,
          tag: variant.tag,
          subscriptions: 1,
          events: SIZE.events * SIZE.fanOut,
          publishers: ONE_SUBSCRIBER_PUBLISHERS,
          how: { protocol: variant.protocol, batch: variant.batch },
          key: `${variant.scenario}.ratio`,
        });
    // BENCH_RATE overrides (b)'s and (f)'s offered rate (for diagnosis).
    const rate = Number(process.env.BENCH_RATE ?? 200);
    if (runs("b")) {
      phase(store, `(b) latency at ${rate}/s, ${SIZE.repeats} × ${SIZE.latencySeconds} s, the machine otherwise idle`);
      const idle = await latency("Bench.Latency", "l", rate);
      report({ store, figure: `(b) p50 publish→receipt at ${rate}/s`, value: idle.p50, unit: "ms" });
      report({ store, figure: `(b) p99 publish→receipt at ${rate}/s`, note: idle.spread, value: idle.p99, unit: "ms", key: "b.p99" });
      report({ store, figure: "(b) lost", value: idle.lost, unit: "", key: "lost" });
      phase(store, `(b) latency at ${rate}/s, ${SIZE.repeats} × ${SIZE.latencySeconds} s, one core kept busy by another process`);
      // One core's worth of unrelated load: an ordinary busy machine.
      const busy = tracked(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
      try {
        const loaded = await latency("Bench.Loaded", "k", rate);
        report({
          store,
          figure: `(b) p99 at ${rate}/s, one core busy`,
          note: loaded.spread,
          value: loaded.p99,
          unit: "ms",
          key: "b.p99.loaded",
        });
        report({ store, figure: "(b) lost, one core busy", value: loaded.lost, unit: "", key: "lost" });
      } finally {
        busy.kill("SIGKILL");
      }
    }
    if (runs("e")) {
      // One subscription per event: at 10 each, 1 000 events/s would be 10 000 deliveries/s, past this machine.
      phase(store, `(e) latency at 1000/s, one subscription, ${SIZE.repeats} × ${SIZE.latencySeconds} s`);
      const fast = await latency("Bench.Rate", "r", 1000);
      report({ store, figure: `(e) p99 publish→receipt at 1000/s`, note: fast.spread, value: fast.p99, unit: "ms", key: "e.p99" });
      report({ store, figure: "(e) lost", value: fast.lost, unit: "", key: "lost" });
    }
    if (runs("c")) {
      // (c) retry storm: 30% of subscriptions answer 500. Its baseline is the same load with every
      // subscription answering 200: the same fan-out and rate, so the ratio is the storm's doing.
      // Each is SIZE.repeats phases of SIZE.stormSeconds, calm ones first (a calm phase after the
      // storm would carry its retries); each figure is the median of its phases' p99s.
      phase(
        store,
        `(c) retry storm: 20 events/s × 10 subscriptions, ${SIZE.repeats} × ${SIZE.stormSeconds} s calm, then ${SIZE.repeats} × ${SIZE.stormSeconds} s with 3 answering 500`,
      );
      const storm = await subscribe("Bench.Storm", 10, "c");
      // Warm-up, as (b) has one: the first calm phase does not carry the first deliveries to ten new
      // subscriptions (their keys opened, their endpoints' connections made) and V8 compiling the paths.
      const warmupLost = await warmUp("Bench.Storm", "c", 20, 8);
      // The receiver's reset forgets which subscriptions fail: each phase names them again.
      const phases = async (failing: string[]) => {
        const healthyShare = 1 - failing.length / storm.length;
        const p99s: number[] = [];
        let lost = 0;
        for (let repeat = 0; repeat < SIZE.repeats; repeat++) {
          receiver.send({ type: "reset", failing });
          const sent = await publish("Bench.Storm", 20 * SIZE.stormSeconds, 20, 8);
          const expected = Math.round(sent.notifications * healthyShare);
          const { records } = await collect(expected, 60_000, "c");
          const got = summarise(records.map((r) => r.latencyMs));
          if (process.env.BENCH_LATENCY_DETAIL) console.error(`  c phase ${repeat + 1}: p99 ${got.p99} ms; ${slowest(records)}`);
          p99s.push(got.p99);
          lost += expected - got.count;
        }
        return {
          p99: median(p99s),
          spread: p99s.length > 1 ? `median of ${p99s.length}: ${p99s.join(", ")} ms` : "",
          lost,
        };
      };
      const calm = await phases([]);
      const c = await phases(storm.slice(0, 3));
      report({ store, figure: "(c) p99 at the same load, no failures", note: calm.spread, value: calm.p99, unit: "ms" });
      report({ store, figure: "(c) healthy p99 during a retry storm", note: c.spread, value: c.p99, unit: "ms" });
      report({ store, figure: "(c) storm p99 / calm p99", value: c.p99 / calm.p99, unit: "×", key: "c.ratio" });
      report({ store, figure: "(c) lost", value: warmupLost + calm.lost + c.lost, unit: "", key: "lost" });
      // The storm's retries run on for up to 31 s (RETRY_SCHEDULE): answered now, they end before the next scenario.
      receiver.send({ type: "reset" });
      await drained();
    }
    if (runs("f")) {
      // (f) fairness: one client's latency at (b)'s rate, alone and then next to another client's
      // endpoint that never answers, with a thousand notifications pending for it.
      phase(store, `(f) fairness: ${rate}/s alone, then beside another client's hung endpoint with 1000 pending`);
      const alone = await latency("Bench.Fair", "f", rate);
      const noisy = await json(base, "POST", "/api/internal/clients", { name: "bench-hung" }, ADMIN);
      const noisyId = (noisy.client as { id: string }).id;
      const hung = await subscribe("Bench.Hung", 10, "h", { apiKey: (noisy.apiKey as { key: string }).key });
      receiver.send({ type: "hold", held: hung });
      const flood = await publish("Bench.Hung", 100, 0, 8, noisyId);
      const beside = await latency("Bench.Fair2", "g", rate);
      report({ store, figure: `(f) p99 at ${rate}/s alone`, note: alone.spread, value: alone.p99, unit: "ms" });
      report({
        store,
        figure: `(f) p99 at ${rate}/s beside ${flood.notifications} pending for a hung endpoint`,
        note: beside.spread,
        value: beside.p99,
        unit: "ms",
      });
      report({ store, figure: "(f) p99 added by the hung endpoint", value: beside.p99 - alone.p99, unit: "ms", key: "f.added" });
      report({ store, figure: "(f) lost", value: alone.lost + beside.lost, unit: "", key: "lost" });
    }
    if (runs("r")) {
      // (r) retention: a steady rate for a client keeping its notifications 10 s; the store's size
      // over time levels off once the purge deletes as many as arrive. The purge takes up a new
      // client's shorter retention at its next round, within a minute: the last third is the measure.
      const seconds = quick ? 90 : 120;
      const rateR = 100;
      phase(store, `(r) retention: ${rateR}/s for ${seconds} s, kept 10 s; the store's size every 10 s`);
      const kept = await json(base, "POST", "/api/internal/clients", { name: "bench-retention", retention: "10s" }, ADMIN);
      const keptId = (kept.client as { id: string }).id;
      receiver.send({ type: "reset" });
      await subscribe("Bench.Retention", 1, "t", { apiKey: (kept.apiKey as { key: string }).key });
      // Without the write-ahead log, whose segments come and go by checkpoints, not by what is kept.
      const sizes: number[] = [await storeSize(true)];
      for (let elapsed = 0; elapsed < seconds; elapsed += 10) {
        await publish("Bench.Retention", rateR * 10, rateR, 16, keptId);
        sizes.push(await storeSize(true));
      }
      const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;
      const lastThird = sizes.length - 1 - Math.floor((sizes.length - 1) / 3);
      report({
        store,
        figure: "(r) store size every 10 s",
        note: `${sizes.map(mb).join(", ")} MB`,
        value: mb(sizes.at(-1) ?? 0),
        unit: "MB",
      });
      report({
        store,
        figure: "(r) store growth over the last third (levelled off: near 0)",
        value: mb((sizes.at(-1) ?? 0) - (sizes[lastThird] ?? 0)),
        unit: "MB",
      });
      if (metricsOn) {
        const text = await (await fetch(`${base}/metrics`)).text();
        const deleted = metricOf(text, 'webhook_retention_deleted_rows_total\\{table="notifications"\\}');
        report({ store, figure: "(r) notifications purged", value: Number(deleted ?? Number.NaN), unit: "" });
      }
    }
    if (!runs("d")) return;
    // (d) backlog: notifications accepted and held pending
    phase(store, `(d) backlog: ${SIZE.backlog} notifications accepted and held pending`);
    const sizeBefore = await storeSize();
    const backlog = await subscribe("Bench.Backlog", SIZE.backlogFanOut, "d");
    receiver.send({ type: "reset" });
    receiver.send({ type: "hold", held: backlog });
    const d1 = await publish("Bench.Backlog", SIZE.backlog / SIZE.backlogFanOut, 0, 4);
    await sleep(2000);
    const resident = await rss(service.pid as number);
    report({
      store,
      figure: `(d) RSS with ${d1.notifications} pending`,
      // What of it is V8's heap: committed, and used by live and not yet collected objects.
      ...(metricsOn ? { note: heapOf(await (await fetch(`${base}/metrics`)).text()) } : {}),
      value: resident,
      unit: "MB",
      key: "d.rss",
    });
    report({
      store,
      figure: "(d) store bytes per pending notification",
      value: ((await storeSize()) - sizeBefore) / d1.notifications,
      unit: "B",
    });
    report({ store, figure: "(d) backlog accepted/s", value: (d1.notifications * 1000) / d1.durationMs, unit: "/s" });
    if (metricsOn) {
      const scrape = await scrapeTime(base);
      report({
        store,
        figure: `(d) GET /metrics with ${d1.notifications} pending (median of ${SCRAPES})`,
        note: `max ${fmt(scrape.max)} ms; webhook_queue_pending ${scrape.pending}`,
        value: scrape.median,
        unit: "ms",
      });
    }
    publisher.process.kill();
  } finally {
    const exited = new Promise((resolve) => service.once("exit", resolve));
    service.kill("SIGTERM");
    await Promise.race([exited, sleep(15_000)]);
    service.kill("SIGKILL");
  }
}

const SCRAPES = 9;

/** A metric's value as the service's /metrics text gives it, unlabelled (undefined if it does not say). */
function metricOf(metrics: string, name: string): string | undefined {
  return new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1];
}

/** V8's heap as the service's /metrics says (prom-client's default metrics), in MB. */
function heapOf(metrics: string): string {
  const mb = (name: string) => {
    const value = metricOf(metrics, name);
    return value === undefined ? "?" : String(Math.round(Number(value) / 1048576));
  };
  return `V8 heap ${mb("nodejs_heap_size_total_bytes")} MB committed, ${mb("nodejs_heap_size_used_bytes")} MB used`;
}

/** How long Prometheus waits for a scrape of /metrics (one after another, as it scrapes), and the pending count it read. */
async function scrapeTime(base: string): Promise<{ median: number; max: number; pending: string }> {
  const times: number[] = [];
  let text = "";
  for (let i = 0; i < SCRAPES; i++) {
    const start = performance.now();
    const response = await fetch(`${base}/metrics`);
    text = await response.text();
    if (!response.ok) throw new Error(`GET /metrics: ${response.status} ${text}`);
    times.push(performance.now() - start);
  }
  return { median: median(times), max: Math.max(...times), pending: metricOf(text, "webhook_queue_pending") ?? "missing" };
}

let postgresVersion: string | undefined;
let postgresAutovacuum: string | undefined;

async function main() {
  if (!asJson) console.error(`webhook service benchmark (${quick ? "quick" : "full"}), ${new Date().toISOString()}`);
  const receiver = await child("receiver.ts");
  const receiverPort = receiver.ready.port as number;
  // The ceiling (the bare sign+POST loop) is measured around each segment of (a), in (a)'s scheme.
  const measureCeiling = async (scheme: Scheme, when: string) => {
    await settle();
    const measured = await ceiling(receiver.process, receiverPort, scheme);
    const label = scheme.signatureScheme === "RSA_SHA256" ? "ceiling" : `ceiling, ${scheme.name}`;
    report({ store: "machine", figure: `${label}: bare sign+POST loop (${when})`, value: measured.rate, unit: "/s" });
    report({ store: "machine", figure: `${label}: machine CPU per delivery (${when})`, value: measured.cpuMs * 1000, unit: "µs" });
    schemeFigures.push({
      store: "machine",
      scheme: scheme.name,
      deliveredPerSecond: measured.rate,
      cpuPerNotificationMicros: { machine: measured.cpuMs * 1000 },
    });
    return measured.rate;
  };

  const stores: Array<
    [
      string,
      () => Promise<{
        env: Record<string, string>;
        size: (withoutWal?: boolean) => Promise<number>;
        cpu: () => Promise<number>;
        done: () => Promise<void>;
      }>,
    ]
  > = [
    [
      "pglite",
      async () => {
        const dir = await mkdtemp(join(tmpdir(), "wh-bench-"));
        return {
          env: { DATA_DIR: dir },
          size: (withoutWal?: boolean) => directorySize(dir, withoutWal),
          cpu: async () => Number.NaN,
          done: () => rm(dir, { recursive: true, force: true }),
        };
      },
    ],
  ];
  if (process.env.POSTGRES_URL) {
    const adminUrl = process.env.POSTGRES_URL;
    stores.push([
      "postgres",
      async () => {
        const name = `wh_bench_${Date.now()}`;
        const admin = new pg.Client({ connectionString: adminUrl });
        await admin.connect();
        const server = (
          await admin.query<{ version: string; autovacuum: string }>(
            "SELECT current_setting('server_version') AS version, current_setting('autovacuum') AS autovacuum",
          )
        ).rows[0];
        postgresVersion = server?.version ?? "unknown";
        postgresAutovacuum = server?.autovacuum ?? "unknown";
        // The bench leaves the server's settings as they are: say when they are not what docs/operations.md asks for.
        if (postgresAutovacuum !== "on")
          console.error("  ! PostgreSQL's autovacuum is off on this server: the job table's dead rows pile up, and its figures show that");
        await admin.query(`CREATE DATABASE ${name}`);
        const url = new URL(adminUrl);
        url.pathname = `/${name}`;
        return {
          env: { DATABASE_URL: url.toString() },
          size: async () => Number((await admin.query(`SELECT pg_database_size('${name}') AS size`)).rows[0].size),
          // The backends connected to this run's database (the service's pools, which live as long as it does).
          cpu: async () => {
            const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [name]);
            const times = await Promise.all(rows.map((row) => processCpuMs(row.pid)));
            // A server on another machine: its processes are not ours to read.
            const local = times.filter(Number.isFinite);
            return local.length === 0 ? Number.NaN : local.reduce((sum, ms) => sum + ms, 0);
          },
          done: async () => {
            // BENCH_KEEP_DB=1 keeps the run's database to look into (for diagnosis).
            if (process.env.BENCH_KEEP_DB) console.error(`  (database ${name} kept)`);
            else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
            await admin.end();
          },
        };
      },
    ]);
  } else if (!asJson) console.error("  (POSTGRES_URL not set: PostgreSQL skipped)");
  if (!process.env.MONGODB_URL && !asJson) console.error("  (MONGODB_URL not set: MongoDB skipped)");

  for (const [name, prepare] of stores) {
    if (onlyStore && name !== onlyStore) continue;
    const prepared = await prepare();
    try {
      await runStore(name, prepared.env, prepared.size, prepared.cpu, receiver.process, receiverPort, measureCeiling);
    } finally {
      await prepared.done();
    }
  }
  if (withPeers) {
    if (process.env.POSTGRES_URL) {
      installPeers();
      await runPeers({
        adminUrl: process.env.POSTGRES_URL,
        receiver: receiver.process,
        receiverPort,
        ceilingNow: (when) => measureCeiling(SCHEMES[0] as Scheme, when),
        report,
        phase,
        size: {
          events: SIZE.events * SIZE.fanOut,
          warmupEvents: SIZE.warmupEvents,
          segments: SIZE.throughputSegments,
          latencySeconds: SIZE.latencySeconds,
          repeats: SIZE.repeats,
        },
        publishers: ONE_SUBSCRIBER_PUBLISHERS,
        ...(peersArgument?.startsWith("--peers=") ? { only: peersArgument.slice(8).split(",") } : {}),
      });
      rows.push(...aheadOfPeers(rows));
    } else console.error("  (--peers needs POSTGRES_URL: the peers keep their notifications in PostgreSQL)");
  }
  receiver.process.kill();
  const list = verdicts(rows);
  const machine = {
    cpus: cpus().length,
    model: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    postgres: postgresVersion,
    postgresAutovacuum,
  };
  console.error(
    `\nTargets (${quick ? "quick run: too short to judge by" : "full run"}; ${machine.cpus} × ${machine.model}, Node ${machine.node}):`,
  );
  console.error(summary(list));
  if (withPeers) {
    console.error("\nSide by side with the peers (same run, same receiver, publisher and ceiling loop):");
    console.error(peersTable(rows));
  }
  if (schemeFigures.some((f) => f.store !== "machine")) {
    console.error("\nSignature schemes (reported, no target):");
    console.error(schemeTable(schemeFigures));
  }
  if (asJson)
    console.log(JSON.stringify({ quick, at: new Date().toISOString(), machine, rows, targets: list, schemes: schemeFigures }, null, 2));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
