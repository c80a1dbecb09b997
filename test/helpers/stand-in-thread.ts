/**
 * A stand-in for the embedded database's thread (embedded-thread.ts), to
 * drive EmbeddedConnection through what a real one rarely does: with
 * `directory` "unopenable" it fails to open; otherwise it answers each
 * statement with the statement's text (`{ said }`) and ends, exit code 3, at
 * the statement "exit", and closes when asked.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { FromThread, ThreadOptions, ToThread } from "../../src/store/postgres/embedded-protocol.js";

const port = parentPort;
if (!port) throw new Error("stand-in-thread.ts runs as a worker thread");
const send = (message: FromThread): void => port.postMessage(message);

if ((workerData as ThreadOptions).directory === "unopenable") {
  send({ kind: "failed", error: { message: "the stand-in could not open its database", fields: { code: "58P01" } } });
  port.close();
} else {
  port.on("message", (message: ToThread) => {
    if (message.kind === "close") {
      send({ kind: "closed" });
      port.close();
    } else if (message.config === "exit") process.exit(3);
    else send({ kind: "rows", id: message.id, command: "SELECT", rowCount: 1, rows: [{ said: message.config }] });
  });
  send({ kind: "ready" });
}
