import { link, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

/** The lock file, in DATA_DIR itself. */
export const LOCK_FILE = "service.lock";

/** Another live process holds the data directory. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holderPid: number | undefined,
  ) {
    super(`DATA_DIR ${dataDir} is in use by another running service (pid ${holderPid ?? "unknown"}); stop it or use another DATA_DIR`);
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * Claims `dataDir` for this process alone: two embedded stores on one
 * directory corrupt it. The claim is a file holding our pid, created
 * atomically with its content (written aside, then hard-linked into place,
 * which fails if the file exists). A file whose pid is not alive was left
 * by a killed process and is taken over. A pid reused by an unrelated
 * process makes a stale file look held: the message names the pid and the
 * file can be removed by hand.
 */
export async function acquireDataDirLock(dataDir: string): Promise<DataDirLock> {
  await makeDirectory(dataDir);
  const path = join(dataDir, LOCK_FILE);
  const mine = `${path}.${process.pid}`;
  await writeFile(mine, `${process.pid}\n`);
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await link(mine, path);
        return { release: () => release(path) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await readHolder(path);
      if (holder === "gone") continue; // released meanwhile
      if (holder !== undefined && isAlive(holder)) throw new DataDirLockedError(dataDir, holder);
      await removeStale(path, holder);
    }
    const holder = await readHolder(path);
    throw new DataDirLockedError(dataDir, typeof holder === "number" ? holder : undefined);
  } finally {
    await rm(mine, { force: true });
  }
}

/**
 * `mkdir -p`, without Node's recursive mkdir: that loops forever, silently,
 * where a parent exists but refuses a new entry with ENOENT (under /proc).
 */
async function makeDirectory(path: string): Promise<void> {
  try {
    await mkdir(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    if (code !== "ENOENT" || dirname(path) === path) throw error;
    await makeDirectory(dirname(path));
    await mkdir(path).catch((again: NodeJS.ErrnoException) => {
      if (again.code !== "EEXIST") throw again;
    });
  }
}

/** The pid in a lock file; undefined if it holds none, "gone" if there is no file. */
async function readHolder(path: string): Promise<number | undefined | "gone"> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "gone";
    throw error;
  }
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // alive, someone else's
  }
}

/**
 * Moves a stale lock file aside (rename is atomic: of two starters taking
 * over the same stale file, one moves it). If what was moved is no longer
 * the stale file but a live process's fresh lock, it goes back.
 */
async function removeStale(path: string, stalePid: number | undefined): Promise<void> {
  const aside = `${path}.${process.pid}.stale`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  const moved = await readHolder(aside);
  if (typeof moved === "number" && moved !== stalePid && isAlive(moved)) await link(aside, path).catch(() => {});
  await rm(aside, { force: true });
}

/** Removes the lock file if it is still ours. */
async function release(path: string): Promise<void> {
  if ((await readHolder(path)) === process.pid) await rm(path, { force: true });
}
