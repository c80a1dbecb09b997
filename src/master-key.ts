import { randomBytes } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { parseMasterKey } from "./domain/key-sealing.js";
import { createDurably } from "./durable-file.js";

/**
 * The embedded store's fallback when SIGNING_MASTER_KEY is not set: a key
 * generated once and kept beside the data. Convenient for development, but
 * whoever copies DATA_DIR copies the key, hence the warning. The file is
 * on disk before any key is sealed with it: a power cut must not take the
 * key and leave the database of keys it sealed.
 */
export async function loadOrCreateMasterKey(dataDir: string, log: Logger): Promise<Buffer> {
  const file = join(dataDir, "signing-master.key");
  log.warn({ file }, "SIGNING_MASTER_KEY is not set: using a key kept under DATA_DIR. Set SIGNING_MASTER_KEY in production.");
  try {
    const key = parseMasterKey(await readFile(file, "utf8"));
    if (!key) throw new Error(`${file} does not hold a 32-byte key`);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const key = randomBytes(32);
  await mkdir(dataDir, { recursive: true });
  await createDurably(file, `${key.toString("hex")}\n`, 0o600);
  return key;
}
