import { type ChildProcess, execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import test from "ava";
import { createClient } from "../helpers/admin.js";
import { spawnOwned } from "../helpers/children.js";
import { type ReceivedRequest, Receiver } from "../helpers/receiver.js";
import { replay } from "../helpers/sdk-receiver.js";
import { rest, sharedService } from "../helpers/service.js";

const run = promisify(execFile);
const PYTHON = "/usr/bin/python3";
const PACKAGE = "packages/receiver-python";
const BASE = "/api/webhookSubscription";
/** No __pycache__ left in the work tree. */
const env = { ...process.env, PYTHONDONTWRITEBYTECODE: "1" };

async function pythonHasCryptography(): Promise<boolean> {
  try {
    await run(PYTHON, ["-c", "import cryptography"]);
    return true;
  } catch {
    return false;
  }
}

const available = existsSync(PYTHON) && (await pythonHasCryptography());
if (!available) console.warn("!!! the Python receiver tests are SKIPPED: install Debian's python3-cryptography (.ci/run does)");
const pythonTest = available ? test : test.skip;
const running = sharedService(test);

pythonTest("the Python module's unit tests pass", async (t) => {
  const { stderr } = await run(PYTHON, ["-m", "unittest", "-v", "test_webhook_receiver"], { cwd: PACKAGE, env });
  t.regex(stderr, /\nOK\n?$/, stderr);
  t.regex(stderr, /Ran \d+ tests/);
});

/** The example server as a child process, its JSON lines collected as they are printed. */
async function startExample(args: string[]): Promise<{
  child: ChildProcess;
  port: number;
  lines: Array<Record<string, unknown>>;
  waitFor: (predicate: () => boolean, what: string) => Promise<void>;
}> {
  const child = spawnOwned(PYTHON, ["example_server.py", "--port", "0", ...args], {
    cwd: PACKAGE,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: Array<Record<string, unknown>> = [];
  let wake: () => void = () => {};
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    // Anything that is not one JSON object is kept as it came, for the failure message to show.
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      lines.push({ unparsed: line });
    }
    wake();
  });
  const waitFor = async (predicate: () => boolean, what: string) => {
    const deadline = Date.now() + 20_000;
    while (!predicate()) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`the Python receiver: ${what} did not happen: ${JSON.stringify(lines)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
  await waitFor(() => lines.some((line) => "listening" in line), "listening");
  return { child, port: lines.find((line) => "listening" in line)?.listening as number, lines, waitFor };
}

pythonTest("the Python example receiver verifies real deliveries, processes each job once, and refuses a tampered replay", async (t) => {
  const owner = await createClient(running.baseUrl, "Python receiver");
  const dir = await mkdtemp(join(tmpdir(), "wh-py-receiver-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  // A real delivery from a second subscription, captured raw: replayed at the receiver below.
  const raw = await Receiver.start();
  const capturing = await rest(running.baseUrl, "POST", BASE, { event: "Order.Cancelled", url: raw.url }, owner.auth);
  await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, { event: "Order.Cancelled", url: raw.url }, owner.auth);
  const [captured] = (await raw.waitFor(1)) as [ReceivedRequest];
  await raw.close();

  // The subscription exists before the receiver (its key is the receiver's argument); its URL follows once the port is known.
  const created = await rest(running.baseUrl, "POST", BASE, { event: "Order.Created", url: "http://127.0.0.1:9/placeholder" }, owner.auth);
  const keyFiles = [join(dir, "current.pem"), join(dir, "capture.pem")];
  await writeFile(keyFiles[0] as string, created.json.signatureKey as string);
  await writeFile(keyFiles[1] as string, capturing.json.signatureKey as string);
  const example = await startExample(["--fail-first", ...keyFiles]);
  t.teardown(() => {
    example.child.kill("SIGTERM");
  });
  const url = `http://127.0.0.1:${example.port}/baseWebhookNotification`;
  t.is((await rest(running.baseUrl, "PATCH", `${BASE}/${created.json.id}`, { url }, owner.auth)).status, 200);

  const jobs = new Map<string, string>();
  // Samples only of the event the URL is subscribed to: a sample of another is refused.
  for (const event of ["Order.Created", "Order.Created", "Order.Created"]) {
    const sample = await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, { event, url }, owner.auth);
    jobs.set(sample.json.jobId as string, event);
  }
  const processed = () => example.lines.filter((line) => "processed" in line);
  await example.waitFor(() => processed().length >= jobs.size, `${jobs.size} jobs processed`);
  t.deepEqual([...new Set(processed().map((line) => line.processed))].sort(), [...new Set(jobs.keys())].sort(), "each job once");
  for (const line of processed()) {
    t.like(
      line,
      { event: jobs.get(line.processed as string), attempt: 1, keyIndex: 0 },
      "processed on the service's retry after --fail-first",
    );
  }
  t.is(example.lines.filter((line) => line.failed === "RuntimeError").length, jobs.size, "each first delivery failed on purpose");

  // Replays of the captured delivery: the failing first, then processed, then only duplicates.
  t.is((await replay(url, captured)).status, 500);
  t.deepEqual((await replay(url, captured)).json, { status: "processed", jobId: captured.headers["x-jobid"] });
  const burst = await Promise.all(Array.from({ length: 20 }, () => replay(url, captured, { headers: { "x-jobattempt": "2" } })));
  t.true(
    burst.every((answer) => answer.status === 200 && answer.json.status === "duplicate"),
    JSON.stringify(burst),
  );
  const tampered = await replay(url, captured, { body: captured.body.replace("CustomerRequest", "FraudCheck") });
  t.deepEqual([tampered.status, tampered.json.error], [401, "invalid_signature"]);
  await example.waitFor(() => example.lines.some((line) => line.refused === "InvalidSignatureError"), "the tampered replay reported");
  t.is(processed().length, jobs.size + 1, "the duplicates and the tampered replay processed nothing");
  t.deepEqual(
    example.lines.filter((line) => "unparsed" in line),
    [],
    "each line printed whole, whichever request's thread printed it",
  );
});
