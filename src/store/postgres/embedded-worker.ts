import { parentPort, workerData } from "node:worker_threads";
import type { PGlite } from "@electric-sql/pglite";
import { openEmbeddedDatabase } from "./embedded-database.js";
import { type EmbeddedThreadData, type FromEmbeddedThread, joined, type ToEmbeddedThread } from "./embedded-thread-messages.js";
import { FrontendMessages, isTerminate } from "./frontend-messages.js";

/**
 * The embedded database's own thread: PGlite runs here, so PostgreSQL's work
 * (a WebAssembly instance executing every statement) does not hold the
 * service's event loop. The service's client speaks the wire protocol to it
 * as to a server (embedded-thread.ts): each message runs in the order
 * written, and what one write's messages answer goes back in one piece,
 * after PGlite has synced it to disk. Once something fails the session is
 * over, as a server drops a connection: nothing more runs but the close.
 */
if (!parentPort) throw new Error("embedded-worker.ts runs as a worker thread");
const port = parentPort;

function post(message: FromEmbeddedThread): void {
  port.postMessage(message, message.kind === "bytes" ? [message.bytes.buffer as ArrayBuffer] : []);
}

function serve(db: PGlite): void {
  const messages = new FrontendMessages();
  let turn = Promise.resolve();
  let broken = false;

  const fail = (why: string) => {
    if (broken) return;
    broken = true;
    post({ kind: "failed", message: why });
  };

  const answer = async (written: Uint8Array) => {
    if (broken) return;
    let batch: Uint8Array[];
    try {
      batch = messages.push(written);
    } catch (error) {
      return fail((error as Error).message);
    }
    const answered: Uint8Array[] = [];
    try {
      for (const message of batch) {
        // The service ends its session by closing the database, not by leaving it.
        if (isTerminate(message)) continue;
        // `data` is PGlite's memory, which it reuses: copied out.
        await db.execProtocolRawStream(message, { onRawData: (data) => answered.push(data.slice()) });
      }
    } catch (error) {
      return fail(`the embedded database failed: ${(error as Error).message}`);
    }
    if (answered.length > 0) post({ kind: "bytes", bytes: answered.length === 1 ? (answered[0] as Uint8Array) : joined(answered) });
  };

  port.on("message", (message: ToEmbeddedThread) => {
    if (message.kind === "bytes") {
      turn = turn.then(() => answer(message.bytes));
      return;
    }
    turn = turn.then(async () => {
      try {
        await db.close();
        post({ kind: "closed" });
      } catch (error) {
        post({ kind: "failed", message: `closing the embedded database failed: ${(error as Error).message}` });
      }
      port.close();
    });
  });
  post({ kind: "ready" });
}

/** What went wrong, never empty: PGlite's start can fail with an Error that has no message (e.g. an abort). */
function describe(error: unknown): string {
  // Emscripten's ExitStatus and the like are thrown as plain objects: "[object Object]" would say nothing.
  if (!(error instanceof Error)) return typeof error === "object" && error !== null ? JSON.stringify(error).slice(0, 500) : String(error);
  const cause = error.cause === undefined ? "" : ` (cause: ${describe(error.cause)})`;
  const top = error.stack?.split("\n")[1]?.trim() ?? "";
  return `${error.message || `${error.name} without a message${top ? `, ${top}` : ""}`}${cause}`;
}

try {
  serve(await openEmbeddedDatabase((workerData as EmbeddedThreadData).directory));
} catch (error) {
  post({ kind: "failed", message: describe(error) });
  port.close();
}
