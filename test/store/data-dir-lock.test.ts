import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { acquireDataDirLock, DataDirLockedError, LOCK_FILE } from "../../src/store/data-dir-lock.js";
import { kill, spawnService, startExpectingExit } from "../helpers/process.js";
import { embeddedDataDir } from "../helpers/stores.js";

async function tempDir(t: import("ava").ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-lock-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The pid of a process that has exited (and been reaped): what a SIGKILLed holder leaves. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid as number;
}

// The mechanism alone.

test("one holder at a time; released, the directory can be claimed again", async (t) => {
  const dir = await tempDir(t);
  const lock = await acquireDataDirLock(dir);
  t.is((await readFile(join(dir, LOCK_FILE), "utf8")).trim(), String(process.pid));
  const refused = await t.throwsAsync(acquireDataDirLock(dir), { instanceOf: DataDirLockedError });
  t.is((refused as DataDirLockedError).holderPid, process.pid);
  t.regex(refused?.message ?? "", new RegExp(`DATA_DIR ${dir} is in use by another running service \\(pid ${process.pid}\\)`));
  await lock.release();
  const again = await acquireDataDirLock(dir);
  await again.release();
  t.pass();
});

test("a lock file left by a dead process, or holding no pid, is taken over", async (t) => {
  const dir = await tempDir(t);
  for (const content of [`${await deadPid()}\n`, "", "not a pid"]) {
    await writeFile(join(dir, LOCK_FILE), content);
    const lock = await acquireDataDirLock(dir);
    t.is((await readFile(join(dir, LOCK_FILE), "utf8")).trim(), String(process.pid), JSON.stringify(content));
    await lock.release();
  }
});

test("release leaves a lock that is no longer ours alone", async (t) => {
  const dir = await tempDir(t);
  const lock = await acquireDataDirLock(dir);
  await writeFile(join(dir, LOCK_FILE), "1\n"); // taken over meanwhile (pid 1 is always alive)
  await lock.release();
  t.is((await readFile(join(dir, LOCK_FILE), "utf8")).trim(), "1");
});

// The real entry point, twice on one DATA_DIR.

test("a second service on the same DATA_DIR exits 2 naming DATA_DIR and the holder's pid; after a SIGKILL the next one starts", async (t) => {
  t.timeout(120_000);
  const dir = await embeddedDataDir("wh-lock-");
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const first = await spawnService({ DATA_DIR: dir });
  t.teardown(() => kill(first, "SIGKILL"));

  const second = await startExpectingExit({ DATA_DIR: dir });
  t.is(second.code, 2);
  t.is(second.stderr, `DATA_DIR ${dir} is in use by another running service (pid ${first.child.pid}); stop it or use another DATA_DIR\n`);
  t.is((await fetch(`${first.baseUrl}/healthz`)).status, 200, "the first keeps serving");

  await kill(first, "SIGKILL"); // leaves its lock file behind
  t.is((await readFile(join(dir, LOCK_FILE), "utf8")).trim(), String(first.child.pid));
  const third = await spawnService({ DATA_DIR: dir });
  t.teardown(() => kill(third, "SIGTERM"));
  t.is((await fetch(`${third.baseUrl}/healthz`)).status, 200, "a stale lock does not block a restart");
});
