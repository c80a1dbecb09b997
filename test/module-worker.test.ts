import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import test from "ava";
import { startModuleWorker } from "../src/module-worker.js";

/** Runs `moduleUrl` as a worker for a caller at `callerUrl` and answers its first message. */
async function firstMessage(moduleUrl: URL, callerUrl: string): Promise<unknown> {
  const worker = startModuleWorker(moduleUrl, callerUrl, { workerData: 20 });
  try {
    return await new Promise((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
  } finally {
    await worker.terminate();
  }
}

async function moduleDir(t: import("ava").ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-module-worker-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // ESM, as our modules are.
  await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  return dir;
}

test("built code starts the built module", async (t) => {
  const dir = await moduleDir(t);
  await writeFile(
    join(dir, "doubler.js"),
    `import { parentPort, workerData } from "node:worker_threads";\nparentPort.postMessage(workerData * 2);\n`,
  );
  t.is(await firstMessage(pathToFileURL(join(dir, "doubler.js")), pathToFileURL(join(dir, "caller.js")).href), 40);
});

test("TypeScript source (run under tsx) starts the module's TypeScript source", async (t) => {
  const dir = await moduleDir(t);
  await writeFile(
    join(dir, "doubler.ts"),
    `import { parentPort, workerData } from "node:worker_threads";\nconst twice: number = (workerData as number) * 2;\nparentPort?.postMessage(twice);\n`,
  );
  // No doubler.js exists: the .ts file is what runs.
  t.is(await firstMessage(pathToFileURL(join(dir, "doubler.js")), pathToFileURL(join(dir, "caller.ts")).href), 40);
});
