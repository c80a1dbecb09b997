import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { spawnOwned } from "./children.js";
import { programArgs } from "./program.js";
import { FAST_TEST_ENV } from "./service.js";
import { type StoreTarget, storeTargets } from "./stores.js";

export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  /** The messages it logged until it listened, that one included. */
  startLog: string[];
}

/** The tests' environment as a service's: POSTGRES_URL is for the tests, and the service refuses it. */
export function serviceEnv(): NodeJS.ProcessEnv {
  const { POSTGRES_URL: _forTheTests, ...env } = process.env;
  return env;
}

/** The service as its own process (programArgs), for tests that kill it. */
export async function spawnService(env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawnOwned(process.execPath, programArgs("main"), {
    env: { ...serviceEnv(), ...FAST_TEST_ENV, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const startLog: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the service did not start within 60 s")), 60_000);
    child.once("exit", (code) => reject(new Error(`the service exited with ${code} before listening`)));
    const onLine = (line: string) => {
      // A line cut short (the child killed mid-write) is no JSON: it is not the one looked for.
      let entry: { msg?: string; port?: number };
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      if (entry.msg) startLog.push(entry.msg);
      if (entry.msg === "webhook service listening" && entry.port) {
        clearTimeout(timer);
        lines.off("line", onLine);
        resolve(entry.port);
      }
    };
    lines.on("line", onLine);
  });
  // Keep draining the log so the child never blocks on a full pipe.
  lines.on("line", () => {});
  return { child, baseUrl: `http://127.0.0.1:${port}`, startLog };
}

export function kill(service: ServiceProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (service.child.exitCode !== null || service.child.signalCode !== null) return resolve();
    service.child.once("exit", () => resolve());
    service.child.kill(signal);
  });
}

/**
 * The service as its own process, expected to refuse to start: its exit code
 * and stderr, or "served" (and then killed) if it started listening instead.
 */
export function startExpectingExit(env: Record<string, string>): Promise<{ code: number | null | "served"; stderr: string }> {
  const child = spawnOwned(process.execPath, programArgs("main"), {
    env: { ...serviceEnv(), ...FAST_TEST_ENV, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      if (!chunk.toString().includes("webhook service listening")) return;
      child.kill("SIGKILL");
      resolve({ code: "served", stderr });
    });
    // "close", not "exit": stderr is read to its end by then.
    child.once("close", (code) => resolve({ code, stderr }));
  });
}

/** Each test starts service processes two or three times: on a busy machine that takes minutes, not ava's default two. */
const SERVICE_STARTS_TIMEOUT_MS = 5 * 60_000;

/** One service process on a store kept across its restarts, on the same port (embedded PGlite unless `target` says). */
export async function restartableService(
  t: { teardown: (fn: () => Promise<void>) => void; timeout: (ms: number) => void },
  target: StoreTarget | undefined = storeTargets()[0],
  env: Record<string, string> = {},
) {
  t.timeout(SERVICE_STARTS_TIMEOUT_MS);
  const store = await target?.create();
  if (!store) throw new Error("no store target");
  const state: { service: ServiceProcess } = { service: await spawnService({ ...store.env, ...env }) };
  const port = new URL(state.service.baseUrl).port;
  t.teardown(async () => {
    await kill(state.service, "SIGKILL");
    await store.cleanup();
  });
  return {
    baseUrl: state.service.baseUrl,
    /** What it was started with: another instance on the same store starts with it too. */
    env: { ...store.env, ...env },
    stop: (signal: NodeJS.Signals = "SIGTERM") => kill(state.service, signal),
    start: async () => {
      state.service = await spawnService({ ...store.env, ...env, PORT: port });
    },
  };
}
