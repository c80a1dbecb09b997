import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import test from "ava";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, API_KEY, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "node_modules", ".bin");
/** Redocly sends no usage data and looks for no update from a test. */
const REDOCLY_ENV = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };

/** The document as the service serves it, saved in a new directory (removed after the test). */
async function servedDocument(t: { teardown: (fn: () => Promise<void>) => void }): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), "wh-openapi-tools-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const response = await fetch(`${running.baseUrl}/openapi.json`);
  const file = join(dir, "openapi.json");
  await writeFile(file, await response.text());
  return { dir, file };
}

test("the served document passes redocly lint's recommended rules with no error or warning", async (t) => {
  const { file } = await servedDocument(t);
  const { stdout } = await run(join(BIN, "redocly"), ["lint", file, "--extends=recommended", "--format=json"], {
    env: REDOCLY_ENV,
  }).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: error.stderr }));
  const report = JSON.parse(stdout) as { problems: { ruleId: string; message: string }[] };
  t.deepEqual(
    report.problems.map((problem) => `${problem.ruleId}: ${problem.message}`),
    [],
  );
});

/** Subscribes, publishes and reads the notification back through a client typed from the document. */
const PROGRAM = `
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const [baseUrl = "", apiKey = "", adminToken = "", receiverUrl = ""] = process.argv.slice(2);
const subscriber = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${apiKey}\` } });
const admin = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${adminToken}\` } });

const created = await subscriber.POST("/api/webhookSubscription", { body: { event: "Order.Created", url: receiverUrl } });
const subscriptionId = created.data?.id;
if (!subscriptionId) throw new Error(\`subscribe: \${JSON.stringify(created.error)}\`);
const clients = await admin.GET("/api/internal/clients");
const clientId = clients.data?.clients?.[0]?.id ?? "";
const published = await admin.POST("/api/internal/events/publish", {
  body: { clientId, event: "Order.Created", payload: { OrderId: "ord_1", CustomerId: "cus_1", TotalAmount: 1, Currency: "EUR" } },
});
const jobId = published.data?.jobIds?.[0];
if (!jobId) throw new Error(\`publish: \${JSON.stringify(published.error)}\`);
const path = { subscriptionId, id: jobId };
const notification = await subscriber.GET("/api/webhookSubscription/{subscriptionId}/notifications/{id}", { params: { path } });
// @ts-expect-error the document names the path's parameters subscriptionId and id: other names do not compile
await subscriber.GET("/api/webhookSubscription/{subscriptionId}/notifications/{id}", { params: { path: { jobId } } });
console.log(JSON.stringify({ subscriptionId, jobId, event: notification.data?.event }));
`;

const TSCONFIG = {
  compilerOptions: {
    target: "es2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    types: ["node"],
  },
  files: ["client.ts"],
};

test("a client typed from the served document by openapi-typescript compiles with tsc, subscribes and publishes", async (t) => {
  const { dir, file } = await servedDocument(t);
  await run(join(BIN, "openapi-typescript"), [file, "--output", join(dir, "schema.d.ts")]);
  await writeFile(join(dir, "client.ts"), PROGRAM);
  await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  await writeFile(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG));
  // The program resolves openapi-fetch and @types/node from this repository's packages.
  await symlink(join(ROOT, "node_modules"), join(dir, "node_modules"));
  const compiled = await run(join(BIN, "tsc"), ["-p", dir]).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
  t.is(compiled.stdout, "", "tsc reports nothing");
  t.regex(await readFile(join(dir, "schema.d.ts"), "utf8"), /"\/api\/internal\/events\/publish"/);

  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const { stdout } = await run(process.execPath, [
    "--import",
    "tsx",
    join(dir, "client.ts"),
    running.baseUrl,
    API_KEY,
    ADMIN_TOKEN,
    receiver.url,
  ]);
  const result = JSON.parse(stdout) as { subscriptionId: string; jobId: string; event: string };
  t.is(result.event, "Order.Created");
  const delivered = await receiver.waitForJob(result.jobId);
  t.like(JSON.parse(delivered.body), { Event: "Order.Created" });
});

test("every REST path the docs name, with its parameters' names, is a path of the served document", async (t) => {
  const document = (await (await fetch(`${running.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const docs = ["README.md", ...(await readdir(join(ROOT, "docs"))).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];
  const named: string[] = [];
  for (const doc of docs) {
    const text = await readFile(join(ROOT, doc), "utf8");
    for (const [, method = "", path = ""] of text.matchAll(/`(GET|POST|PATCH|PUT|DELETE) (\/api\/[^\s`?]+)/g))
      named.push(`${doc}: ${method} ${path}`);
  }
  t.true(named.length > 20, named.join("\n"));
  t.deepEqual(
    named.filter((entry) => {
      const [, method = "", path = ""] = /: (\S+) (\S+)$/.exec(entry) ?? [];
      return !document.paths[path]?.[method.toLowerCase()];
    }),
    [],
  );
});
