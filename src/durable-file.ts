import { link, open, rm } from "node:fs/promises";
import { dirname } from "node:path";

/** fsync of the file or directory at `path`: what it holds (a directory: its entries) is on disk. */
export async function syncPath(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Creates `path` holding `content`, durably and whole: written and synced
 * under a name of its own, then linked into place (which fails with EEXIST
 * if `path` exists) and the directory synced. A power cut leaves no file,
 * or the whole file, never an empty or partial one.
 */
export async function createDurably(path: string, content: string, mode: number): Promise<void> {
  const aside = `${path}.${process.pid}.new`;
  const handle = await open(aside, "w", mode);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(aside, path);
  } finally {
    await rm(aside, { force: true });
  }
  await syncPath(dirname(path));
}
