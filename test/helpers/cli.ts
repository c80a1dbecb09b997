import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { spawnOwned } from "./children.js";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The `webhooks` CLI as its own process, from its sources. */
export function spawnCli(args: readonly string[], env: Record<string, string>): ChildProcess {
  return spawnOwned(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** Runs one command to its end; `input` is written to its stdin. */
export function runCli(args: readonly string[], env: Record<string, string>, input = ""): Promise<CliResult> {
  const child = spawnCli(args, env);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // A command that exits without reading its input closes the pipe: the write's EPIPE is no failure of the test.
  child.stdin?.on("error", () => {});
  child.stdin?.end(input);
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

/** Each line the process prints, as it prints it. */
export function linesOf(child: ChildProcess): AsyncIterable<string> {
  return createInterface({ input: child.stdout as NodeJS.ReadableStream });
}
