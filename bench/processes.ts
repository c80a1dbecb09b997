/**
 * The bench's processes: the children it starts (stopped with it when it is
 * interrupted), messages to them, and the CPU time processes and the machine
 * used, from /proc.
 */
import { type ChildProcess, fork } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";

/** Every process the bench started, stopped with it when it is interrupted (Ctrl-C, SIGTERM). */
const children = new Set<ChildProcess>();
export function tracked<T extends ChildProcess>(proc: T): T {
  children.add(proc);
  proc.once("exit", () => children.delete(proc));
  return proc;
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const proc of children) proc.kill("SIGKILL");
    process.exit(130);
  });
}

/** Starts `script` (a path under bench/) with `env` added to the bench's; resolves with its first message. */
export function child(
  script: string,
  env: Record<string, string> = {},
): Promise<{ process: ChildProcess; ready: Record<string, unknown> }> {
  const proc = tracked(
    fork(join(import.meta.dirname, script), [], {
      execArgv: ["--import", "tsx"],
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    }),
  );
  return new Promise((resolve) => proc.once("message", (ready) => resolve({ process: proc, ready: ready as Record<string, unknown> })));
}

/** Sends `message` to a child and answers its `reply`; fails if the child exits first. */
export function ask<T>(proc: ChildProcess, message: object, reply: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== reply) return;
      proc.off("message", onMessage);
      proc.off("exit", onExit);
      resolve(m as T);
    };
    const onExit = (code: number | null, signal: string | null) => {
      proc.off("message", onMessage);
      reject(new Error(`${proc.spawnargs.at(-1)} exited (${signal ?? code}) before it answered ${reply}`));
    };
    proc.on("message", onMessage);
    proc.once("exit", onExit);
    proc.send(message);
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** CPU time all processes spent busy since boot, from /proc/stat (Linux; NaN elsewhere). */
export async function machineBusyMs(): Promise<number> {
  const line = await readFile("/proc/stat", "utf8").then(
    (text) => text.split("\n")[0] ?? "",
    () => "",
  );
  const [user, nice, system, , , irq, softirq] = line.split(/\s+/).slice(1).map(Number);
  if (user === undefined) return Number.NaN;
  return ((user + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0)) * 1000) / 100;
}

/** CPU time (user + system, all threads) a process has used, from /proc/<pid>/stat (Linux; NaN elsewhere). */
export async function processCpuMs(pid: number | undefined): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
