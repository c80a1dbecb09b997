import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

export interface EmbeddedPostgres {
  /** A postgres:// URL the `pg` driver (and Agenda's backend) connects to. */
  connectionString: string;
  close(): Promise<void>;
}

/**
 * PGlite under `dataDir`, served on a loopback port so the same `pg` code
 * path runs embedded and against a real server.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  maxConnections: number,
  sessionSettings: readonly string[] = [],
): Promise<EmbeddedPostgres> {
  const directory = join(dataDir, "pglite");
  await mkdir(directory, { recursive: true });
  const db = await PGlite.create(directory);
  // The socket ignores startup options; PGlite is one session, so a SET here holds for every connection.
  for (const setting of sessionSettings) await db.exec(`SET ${setting}`);
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections });
  await server.start();
  return {
    connectionString: `postgres://postgres@${server.getServerConn()}/postgres?sslmode=disable`,
    async close() {
      await server.stop();
      await db.close();
    },
  };
}
