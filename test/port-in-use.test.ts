import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { startExpectingExit } from "./helpers/process.js";

test("a taken PORT: one line naming it, exit 2, and the store is never opened", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "wh-port-"));
  const squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
  t.teardown(async () => {
    await new Promise((resolve) => squatter.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });
  const port = (squatter.address() as { port: number }).port;
  const started = Date.now();
  const { code, stderr } = await startExpectingExit({ PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dir });
  t.is(code, 2, stderr);
  t.is(stderr, `PORT ${port} is already in use\n`);
  t.false(existsSync(join(dir, "pglite")), "the embedded store was not opened");
  t.log(`refused in ${Date.now() - started} ms`);
});
