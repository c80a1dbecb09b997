import { fsyncSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { NodeFS } from "@electric-sql/pglite/nodefs";

/**
 * PGlite under Node keeps its files through Emscripten's NODEFS, which
 * implements no `fsync`: PostgreSQL's fsync() reaches Emscripten's
 * `fd_sync`, which calls the file system's `stream_ops.fsync` if there is
 * one and otherwise does nothing (and `fdatasync()` is a no-op outright).
 * PGlite also starts PostgreSQL with `-F` (fsync off). Together, nothing
 * the embedded database writes is ever forced to disk: a power cut can lose
 * acknowledged commits, or leave data files older than the checkpoint that
 * `pg_control` names, a database that no longer opens.
 *
 * `SyncingNodeFS` is PGlite's own NodeFS with that one operation added:
 * fsync() of a file or directory is Node's fsyncSync() of its descriptor.
 * With fsync on and `wal_sync_method=fsync` (the one sync call that now
 * does something), PostgreSQL's own crash safety holds as on a server:
 * each commit's WAL is on disk before the commit returns, the WAL is
 * flushed before a data page is written, a checkpoint syncs the data files
 * before `pg_control` points past the WAL that covers them, and new WAL
 * segments and their directory are synced as they are made. Every commit
 * the API answers after syncs (delivery bookkeeping commits without waiting:
 * EmbeddedPool); calls arriving together share one statement, so one commit
 * and one sync serve them all (coalescer.ts).
 *
 * Emscripten's NODEFS is PGlite's internal, so:
 * - PGlite is pinned to an exact version in package.json;
 * - the patch refuses to apply (the database does not open, loudly) unless
 *   NODEFS has the shape it was written against: a `stream_ops` whose
 *   streams hold Node descriptors (`nfd`) and no `fsync` of its own;
 * - test/store/embedded-power-loss.test.ts cuts the power under the
 *   service and fails if an acknowledged notification is lost.
 */
export const PATCHED_PGLITE_VERSION = "0.5.14";

/** PostgreSQL's settings that make it sync through the operation added here. */
export const SYNCING_SETTINGS = ["fsync=on", "wal_sync_method=fsync"] as const;

/** PGlite's start parameters with fsync left on (PGlite's own turn it off with `-F`). */
export const SYNCING_START_PARAMS = PGlite.defaultStartParams.filter((param) => param !== "-F");

interface NodeStream {
  nfd?: number;
}

interface NodefsInternals {
  stream_ops: Record<string, unknown> & { fsync?: (stream: NodeStream) => number };
  tryFSOperation<T>(operation: () => T): T;
}

type EmscriptenModule = { FS: { filesystems: { NODEFS?: NodefsInternals } } };

/** Gives Emscripten's NODEFS an fsync of the Node descriptor behind a stream; refuses a NODEFS it does not know. */
export function addFsyncTo(nodefs: NodefsInternals | undefined): void {
  if (!nodefs || typeof nodefs.stream_ops?.write !== "function" || typeof nodefs.tryFSOperation !== "function") {
    throw new Error(`PGlite's NODEFS is not the one the fsync patch was written for (PGlite ${PATCHED_PGLITE_VERSION})`);
  }
  if (nodefs.stream_ops.fsync !== undefined) {
    throw new Error("PGlite's NODEFS has an fsync of its own: the fsync patch (embedded-fsync.ts) is to be reviewed");
  }
  nodefs.stream_ops.fsync = (stream) => {
    const descriptor = stream.nfd;
    if (descriptor === undefined) throw new Error("a NODEFS stream without a Node descriptor: the fsync patch does not fit");
    nodefs.tryFSOperation(() => fsyncSync(descriptor));
    return 0;
  };
}

/** PGlite's NodeFS whose fsync() reaches the disk (see above). */
export class SyncingNodeFS extends NodeFS {
  override async init(pg: PGlite, options: Parameters<NodeFS["init"]>[1]): ReturnType<NodeFS["init"]> {
    const { emscriptenOpts } = await super.init(pg, options);
    const preRun = [...((emscriptenOpts.preRun as unknown[] | undefined) ?? [])];
    preRun.push((module: EmscriptenModule) => addFsyncTo(module.FS.filesystems.NODEFS));
    return { emscriptenOpts: { ...emscriptenOpts, preRun } as typeof emscriptenOpts };
  }
}
