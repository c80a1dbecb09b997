import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm, rmdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { syncPath } from "../../durable-file.js";
import { SYNCING_SETTINGS, SYNCING_START_PARAMS, SyncingNodeFS } from "./embedded-fsync.js";

const execFileAsync = promisify(execFile);

/**
 * PostgreSQL's shared buffers in the embedded database. PGlite's default
 * (128 MB) is memory the WebAssembly instance touches as it starts and
 * never gives back; the table files stay in the operating system's page
 * cache either way, so a smaller pool costs a copy from that cache, not a
 * disk read.
 */
export const EMBEDDED_SHARED_BUFFERS = "32MB";

/**
 * Settings of ours for the embedded PostgreSQL, beyond PGlite's own:
 * - fsync on, through the one sync call PGlite's file system can make
 *   (embedded-fsync.ts): a commit is on disk before it returns;
 * - its buffer pool (above);
 * - `wal_init_zero=off`: with no checkpointer, a checkpoint comes only once
 *   max_wal_size (1 GB) of WAL is written, so there are seldom old WAL
 *   segments to recycle, and a new 16 MB one is made every 16 MB of WAL.
 *   Filling it with zeros held the commit that crossed into it, and every
 *   statement behind it, for 80-140 ms (at 200 events/s, every 45 s or so).
 *   Off, a new segment is made by writing its last byte.
 */
const EMBEDDED_SETTINGS = [...SYNCING_SETTINGS, `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`, "wal_init_zero=off"] as const;

/**
 * Opens the PGlite database in `directory`, creating it first if there is
 * none. A new database is made in a child process: initdb runs in a
 * WebAssembly instance of its own whose memory (about 150 MB) this process
 * would otherwise keep for good. It is made beside `directory` and moved
 * into place whole, so an interrupted creation leaves no half a database.
 */
export async function openEmbeddedDatabase(directory: string): Promise<PGlite> {
  if (!existsSync(join(directory, "PG_VERSION"))) {
    const held = await readdir(directory).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return [];
      throw error;
    });
    if (held.length > 0) throw new Error(`${directory} holds files but no database (no PG_VERSION): move it away to start anew`);
    await createEmbeddedDatabase(directory);
  }
  return PGlite.create({
    fs: new SyncingNodeFS(directory),
    startParams: [...SYNCING_START_PARAMS, ...EMBEDDED_SETTINGS.flatMap((setting) => ["-c", setting])],
  });
}

/**
 * Makes a new, empty database in `directory` (which must not hold one) in a
 * child process, beside it first and then moved into place whole. initdb
 * syncs nothing (PGlite's defaults), so every file it made is synced before
 * the move, and the move itself after: a power cut leaves either no
 * database or a whole one.
 */
export async function createEmbeddedDatabase(directory: string): Promise<void> {
  const parent = dirname(directory);
  await mkdir(parent, { recursive: true });
  // What an earlier, interrupted creation left (this process holds the data directory's lock).
  const unfinished = `${basename(directory)}.new-`;
  for (const name of await readdir(parent)) {
    if (name.startsWith(unfinished)) await rm(join(parent, name), { recursive: true, force: true });
  }
  const making = `${directory}.new-${process.pid}`;
  const script = `const { PGlite } = await import(${JSON.stringify(import.meta.resolve("@electric-sql/pglite"))});
    const db = await PGlite.create(${JSON.stringify(making)});
    await db.close();`;
  try {
    await execFileAsync(process.execPath, ["--input-type=module", "-e", script], { maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    await rm(making, { recursive: true, force: true });
    const { stderr, signal } = error as { stderr?: string; signal?: string };
    const why = signal ? `the process making it was killed (${signal})` : stderr?.trim() || (error as Error).message;
    throw new Error(`creating the embedded database in ${directory} failed: ${why}`);
  }
  // An empty directory (an older version made it before its database) gives way.
  await rmdir(directory).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
  await syncTree(making);
  await rename(making, directory);
  await syncPath(parent);
}

/** fsync of every file and directory under `path`, then of `path` itself. */
async function syncTree(path: string): Promise<void> {
  for (const entry of await readdir(path, { withFileTypes: true })) {
    const inside = join(path, entry.name);
    if (entry.isDirectory()) await syncTree(inside);
    else if (entry.isFile()) await syncPath(inside);
  }
  await syncPath(path);
}
