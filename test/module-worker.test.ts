import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
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

// A worker that allocates objects surviving a few scavenges (as V8 grows a young generation that
// keeps objects) and answers how big its young generation became, in MB.
const ALLOCATOR = `import { getHeapSpaceStatistics } from "node:v8";
import { parentPort } from "node:worker_threads";
let kept = [];
for (let i = 0; i < 3e6; i++) {
  kept.push({ i, text: "x" + i });
  if (kept.length > 200000) kept = [];
}
const young = getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
parentPort.postMessage(Math.round(young.space_size / 1048576));
`;

test("a worker's young-generation limit holds where the process sets --max-semi-space-size, as npm start does", async (t) => {
  const dir = await moduleDir(t);
  await writeFile(join(dir, "allocator.js"), ALLOCATOR);
  // In a process of its own: the flag is read as the process starts.
  const script = `import { startModuleWorker } from ${JSON.stringify(pathToFileURL(join(process.cwd(), "src/module-worker.ts")).href)};
    const youngMb = (options) => new Promise((resolve, reject) => {
      const worker = startModuleWorker(new URL(${JSON.stringify(pathToFileURL(join(dir, "allocator.js")).href)}), import.meta.url, options);
      worker.once("message", (mb) => worker.terminate().then(() => resolve(mb)));
      worker.once("error", reject);
    });
    const unlimited = await youngMb({});
    const limited = await youngMb({ resourceLimits: { maxYoungGenerationSizeMb: 12 } });
    console.log(JSON.stringify({ unlimited, limited }));`;
  await writeFile(join(dir, "check.js"), script);
  const { stdout } = await promisify(execFile)(process.execPath, ["--max-semi-space-size=32", "--import", "tsx", join(dir, "check.js")]);
  const { unlimited, limited } = JSON.parse(stdout) as { unlimited: number; limited: number };
  // The flag is in force: beyond Node's default (two 16 MB semi-spaces) for a worker that sets no limit of its own.
  t.true(unlimited > 32, `a worker without a limit grew only a ${unlimited} MB young generation`);
  t.true(limited <= 12, `a worker limited to 12 MB grew a ${limited} MB young generation`);
});
