import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { API_KEY, sharedService } from "./helpers/service.js";

// The README's quick start, run as written (its host and temporary files moved to this test's).
const running = sharedService(test);

/** The lines of the README's quick start from "# <step>." up to the next step. */
async function readmeStep(step: number): Promise<string> {
  const readme = await readFile("README.md", "utf8");
  const start = readme.indexOf(`# ${step}. `);
  const end = readme.indexOf(`# ${step + 1}. `, start);
  if (start < 0 || end < 0) throw new Error(`the README has no quick start step ${step}`);
  return readme.slice(start, end);
}

async function runStep(t: import("ava").ExecutionContext, step: number, edit: (script: string) => string) {
  const dir = await mkdtemp(join(tmpdir(), "wh-readme-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const script = edit(await readmeStep(step))
    .replaceAll("localhost:8080", new URL(running.baseUrl).host)
    .replaceAll("/tmp/", `${dir}/`);
  const child = spawn("bash", ["-c", script], { env: { ...process.env, API_KEY }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  return { code, stdout, stderr, key: await readFile(join(dir, "signature-key.pem"), "utf8").catch(() => "") };
}

test("step 2 keeps the signature key of the subscription it creates", async (t) => {
  const { code, stdout, stderr, key } = await runStep(t, 2, (script) => script);
  t.is(code, 0, stderr);
  t.regex(stdout, /"id":"sub_/);
  t.regex(key, /^-----BEGIN PUBLIC KEY-----/);
});

test("step 2 shows a refused subscription's error, not a TypeError", async (t) => {
  const { code, stdout, stderr, key } = await runStep(t, 2, (script) =>
    script.replace('"event":"Order.Created"', '"event":"Order.Exploded"'),
  );
  t.not(code, 0);
  t.regex(stdout, /"code":"invalid_argument","message":"unknown event \\"Order.Exploded\\"/);
  t.false(stderr.includes("TypeError"), stderr);
  t.is(key, "");
});
