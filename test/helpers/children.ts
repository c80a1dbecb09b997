import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";

type Stdio = Extract<SpawnOptions["stdio"], unknown[]>;

const living = new Set<ChildProcess>();

function killAll(): void {
  for (const child of living) child.kill("SIGKILL");
}

/**
 * A child process owned by this test file. It is killed when the file's worker
 * exits, an uncaught exception's exit included, so no server a test started
 * outlives the run. Its stderr is a pipe copied to ours, never our own
 * descriptor: a child that escapes anyway does not hold the run's output open.
 */
export function spawnOwned(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const stdio: Stdio = Array.isArray(options.stdio) ? [...options.stdio] : ["pipe", "pipe", "pipe"];
  const forwardStderr = stdio[2] === "inherit";
  if (forwardStderr) stdio[2] = "pipe";
  const child: ChildProcess = spawn(command, args, { ...options, stdio });
  if (forwardStderr) child.stderr?.pipe(process.stderr, { end: false });
  if (living.size === 0) process.once("exit", killAll);
  living.add(child);
  child.once("exit", () => {
    living.delete(child);
    if (living.size === 0) process.off("exit", killAll);
  });
  return child;
}
