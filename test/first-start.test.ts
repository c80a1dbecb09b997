import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { kill, spawnService } from "./helpers/process.js";

// One after the other: two embedded databases created at once by two services failed under load.

async function startLogOf(t: import("ava").ExecutionContext, env: Record<string, string>): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), "wh-first-start-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const service = await spawnService({ DATA_DIR: dir, ...env });
  await kill(service, "SIGTERM");
  return service.startLog;
}

test.serial("a plain start says where the portal is and how to get an admin token and an API key", async (t) => {
  const log = await startLogOf(t, { ADMIN_TOKEN: "", BOOTSTRAP_API_KEY: "", HOST: "0.0.0.0" });
  const hint = log.find((line) => line.includes("/portal/"));
  t.truthy(hint, log.join("\n"));
  t.regex(hint ?? "", /http:\/\/localhost:\d+\/portal\//);
  t.regex(hint ?? "", /set ADMIN_TOKEN .* to create clients and their API keys/);
});

test.serial("with ADMIN_TOKEN set, the start says to sign in with it", async (t) => {
  const log = await startLogOf(t, {});
  t.truthy(
    log.find((line) => /portal\/; operators sign in with ADMIN_TOKEN/.test(line)),
    log.join("\n"),
  );
});
