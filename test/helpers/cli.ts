import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { spawnOwned } from "./children.js";
import { programArgs } from "./program.js";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The `webhooks` CLI as its own process (programArgs). */
export function spawnCli(args: readonly string[], env: Record<string, string>): ChildProcess {
  return spawnOwned(process.execPath, [...programArgs("cli/main"), ...args], {
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

/** A CLI process whose stdout and stderr are collected, with a way to wait for a line. */
export function watchCli(args: string[], env: Record<string, string>) {
  const child: ChildProcess = spawnCli(args, env);
  const output = { stdout: "", stderr: "" };
  const listeners = new Set<() => void>();
  const wake = () => {
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    output.stdout += chunk.toString();
    wake();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output.stderr += chunk.toString();
    wake();
  });
  const closed = new Promise<number | null>((resolve) => child.once("close", resolve));
  const waitFor = (stream: "stdout" | "stderr", pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(output[stream])) return;
        listeners.delete(check);
        resolve();
      };
      listeners.add(check);
      void closed.then(() => {
        if (!pattern.test(output[stream])) reject(new Error(`exited before ${pattern} on ${stream}:\n${output.stdout}\n${output.stderr}`));
      });
      check();
    });
  return { child, output, closed, waitFor };
}
