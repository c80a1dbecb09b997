import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";

type Stdio = Extract<SpawnOptions["stdio"], unknown[]>;

/** Each child still running, and the signal that ends it. */
const living = new Map<ChildProcess, NodeJS.Signals>();
/** A worker ended by a signal (ava's timeout sends SIGTERM) emits no 'exit': these end the children first. */
const ENDING_SIGNALS: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];

function endAll(): void {
  for (const [child, signal] of living) child.kill(signal);
}

function endAllThenRaise(signal: NodeJS.Signals): void {
  endAll();
  unhook();
  // With no listener left, the signal does what it would have: end this process.
  process.kill(process.pid, signal);
}

function hook(): void {
  process.once("exit", endAll);
  for (const signal of ENDING_SIGNALS) process.once(signal, endAllThenRaise);
}

function unhook(): void {
  process.off("exit", endAll);
  for (const signal of ENDING_SIGNALS) process.off(signal, endAllThenRaise);
}

/**
 * A child process owned by this test file. It is ended when the file's worker
 * exits (an uncaught exception's exit included) or is ended by a signal, so no
 * server a test started outlives the run: with SIGKILL, or `endWith` for one
 * that must clean up after itself (a script with its own trap). Its stderr is
 * a pipe copied to ours, never our own descriptor: a child that escapes
 * anyway does not hold the run's output open.
 */
export function spawnOwned(
  command: string,
  args: readonly string[],
  options: SpawnOptions,
  endWith: NodeJS.Signals = "SIGKILL",
): ChildProcess {
  const stdio: Stdio = Array.isArray(options.stdio) ? [...options.stdio] : ["pipe", "pipe", "pipe"];
  const forwardStderr = stdio[2] === "inherit";
  if (forwardStderr) stdio[2] = "pipe";
  const child: ChildProcess = spawn(command, args, { ...options, stdio });
  if (forwardStderr) child.stderr?.pipe(process.stderr, { end: false });
  if (living.size === 0) hook();
  living.set(child, endWith);
  child.once("exit", () => {
    living.delete(child);
    if (living.size === 0) unhook();
  });
  return child;
}
