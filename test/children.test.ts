import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import test from "ava";

/** Whether a process with this pid still runs: one killed but not yet reaped (a zombie, state Z) does not. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return condition();
}

test("a child started with spawnOwned dies with the process that started it, even one ended by an uncaught exception, and holds none of its output open", async (t) => {
  // A parent that starts a long-lived child (its stderr as a test's would be), prints the child's pid, then throws.
  const script = `
    import { spawnOwned } from "./test/helpers/children.ts";
    const child = spawnOwned(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: ["ignore", "ignore", "inherit"] });
    console.log(child.pid);
    setTimeout(() => { throw new Error("uncaught on purpose"); }, 100);
  `;
  const parent = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  parent.stderr.resume();
  let closed = false;
  parent.once("close", () => {
    closed = true;
  });
  const [pidLine] = await Promise.all([
    // A parent that ends without printing gives "" (and fails below) rather than a hang.
    new Promise<string>((resolve) => {
      createInterface({ input: parent.stdout }).once("line", resolve);
      parent.once("exit", () => resolve(""));
    }),
    new Promise((resolve) => parent.once("exit", resolve)),
  ]);
  t.not(parent.exitCode, 0, "the parent ended on its exception");
  const pid = Number(pidLine);
  t.true(Number.isInteger(pid) && pid > 0, pidLine);
  t.teardown(() => {
    if (pid > 0 && alive(pid)) process.kill(pid, "SIGKILL");
  });
  t.true(await until(() => !alive(pid), 10_000), `the child ${pid} outlived its parent`);
  t.true(await until(() => closed, 10_000), "the parent's output closed: no child holds it");
});

test("a child started with spawnOwned dies with a parent ended by SIGTERM, and the parent still ends by that signal", async (t) => {
  const script = `
    import { spawnOwned } from "./test/helpers/children.ts";
    const child = spawnOwned(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: ["ignore", "ignore", "inherit"] });
    console.log(child.pid);
    setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  parent.stderr.resume();
  const pidLine = await new Promise<string>((resolve) => {
    createInterface({ input: parent.stdout }).once("line", resolve);
    parent.once("exit", () => resolve(""));
  });
  const pid = Number(pidLine);
  t.true(Number.isInteger(pid) && pid > 0, pidLine);
  t.teardown(() => {
    if (pid > 0 && alive(pid)) process.kill(pid, "SIGKILL");
  });
  const exited = once(parent, "exit");
  parent.kill("SIGTERM");
  const [, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  t.is(signal, "SIGTERM", "the signal, raised again, ended the parent");
  t.true(await until(() => !alive(pid), 10_000), `the child ${pid} outlived its parent`);
});
