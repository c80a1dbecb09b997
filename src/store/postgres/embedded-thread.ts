/**
 * The embedded database's own thread (a worker, started by
 * embedded-connection.ts): PGlite runs PostgreSQL as WebAssembly, and every
 * statement's work is synchronous CPU on the thread that runs it. Here, it
 * keeps the service's main thread (the API, the deliveries) free while a
 * statement or a VACUUM runs, and uses the machine's other core.
 *
 * One session (PGlite has one), driven by the same `pg` client code as a
 * server, through PGlite's node-postgres connection. Statements run in the
 * order they arrive; the pool on the other side decides that order
 * (transactions, turns).
 */
import { parentPort, workerData } from "node:worker_threads";
import type { PGlite } from "@electric-sql/pglite";
import { createPgConfig } from "@electric-sql/pglite/node-postgres";
import pg from "pg";
import { openEmbeddedDatabase } from "./embedded-database.js";
import { errorData, type FromThread, type ThreadOptions, type ToThread } from "./embedded-protocol.js";

const port = parentPort;
if (!port) throw new Error("embedded-thread.ts runs as a worker thread, started by EmbeddedConnection");
const send = (message: FromThread): void => port.postMessage(message);

const { directory, settings } = workerData as ThreadOptions;

async function open(): Promise<{ db: PGlite; client: pg.Client }> {
  const db = await openEmbeddedDatabase(directory);
  const client = new pg.Client(createPgConfig(db));
  client.on("error", (error) => send({ kind: "broken", error: errorData(error) }));
  try {
    await client.connect();
    for (const setting of settings) await client.query(`SET ${setting}`);
  } catch (error) {
    await db.close();
    throw error;
  }
  return { db, client };
}

/** The last statement sent to the session (pg runs them in turn): closing waits for it. */
let underWay: Promise<void> = Promise.resolve();

async function close(db: PGlite, client: pg.Client): Promise<void> {
  await underWay;
  await client.end();
  await db.close();
}

try {
  const { db, client } = await open();
  port.on("message", (message: ToThread) => {
    if (message.kind === "close") {
      void close(db, client)
        .then(
          () => send({ kind: "closed" }),
          (error) => send({ kind: "failed", error: errorData(error) }),
        )
        .finally(() => port.close());
      return;
    }
    const { id, config, values } = message;
    underWay = client.query(config as pg.QueryConfig, values).then(
      (result) => send({ kind: "rows", id, command: result.command, rowCount: result.rowCount, rows: result.rows }),
      (error) => send({ kind: "refused", id, error: errorData(error) }),
    );
  });
  send({ kind: "ready" });
} catch (error) {
  send({ kind: "failed", error: errorData(error) });
  port.close();
}
