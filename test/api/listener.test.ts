import { once } from "node:events";
import { connect, type Socket } from "node:net";
import test from "ava";
import { listen } from "../../src/api/listener.js";

/** Reads from `socket` until `done` says the text so far is complete (leaving the socket open). */
function readUntil(socket: Socket, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (!done(text)) return;
      socket.off("data", onData);
      socket.off("error", reject);
      resolve(text);
    };
    socket.on("data", onData);
    socket.on("error", reject);
  });
}

test("closing: a keep-alive request answered at once during the grace period is told to close, and nothing throws", async (t) => {
  let release: () => void = () => {};
  let started: () => void = () => {};
  const inHandler = new Promise<void>((resolve) => {
    started = resolve;
  });
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const listener = await listen(
    0,
    "127.0.0.1",
    (req, res) => {
      // /slow is under way when closing starts; /fast answers in the handler itself, as health does.
      if (req.url === "/slow") {
        started();
        void held.then(() => res.writeHead(200, { "content-length": "4" }).end("slow"));
      } else res.writeHead(200, { "content-length": "4" }).end("fast");
    },
    (error) => t.fail(error.message),
  );
  const socket = connect(listener.port, "127.0.0.1");
  await once(socket, "connect");
  socket.write("GET /slow HTTP/1.1\r\nhost: x\r\n\r\n");
  await inHandler;
  const closed = listener.close(5_000);
  release();
  const first = await readUntil(socket, (text) => text.endsWith("slow"));
  t.regex(first, /^HTTP\/1\.1 200/);
  socket.write("GET /fast HTTP/1.1\r\nhost: x\r\n\r\n");
  const second = await readUntil(socket, (text) => text.endsWith("fast"));
  t.regex(second, /^HTTP\/1\.1 200/);
  t.regex(second, /\r\nconnection: close\r\n/i);
  await once(socket, "close");
  await closed;
});
