import { connect, createServer } from "node:net";
import test from "ava";
import { spawnOwned } from "./helpers/children.js";
import { serviceEnv } from "./helpers/process.js";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("examples/quickstart.sh, the README's quick start, runs end to end", async (t) => {
  t.timeout(240_000);
  const env = { ...serviceEnv(), PORT: String(await freePort()), RECEIVER_PORT: String(await freePort()) };
  // SIGTERM, should the test end first: the script's own trap stops what it started.
  const child = spawnOwned("bash", ["examples/quickstart.sh"], { env, stdio: ["ignore", "pipe", "pipe"] }, "SIGTERM");
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  t.is(code, 0, output);
  t.regex(output, /verified Order\.Created job ntf_[0-9a-f]{32} attempt 0: \{"OrderId":"ord_1001"/, "the sample, verified");
  t.regex(output, /verified Order\.Created job ntf_[0-9a-f]{32} attempt 0: \{"OrderId":"ord_42"/, "the published event, verified");
  t.regex(output, /quick start: done/);
  // The script stops what it started: nothing answers on its ports once it is done.
  for (const port of [env.PORT, env.RECEIVER_PORT]) {
    t.true(await closesWithin(Number(port), 20_000), `port ${port} is free again`);
  }
});

/** Whether connections to the port are refused within the time (polled). */
async function closesWithin(port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (!open) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}
