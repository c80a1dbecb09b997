import test from "ava";
import { runCli } from "../helpers/cli.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const receiver = Receiver.shared(test);

const asClient = () => ({ WEBHOOKS_URL: running.baseUrl, WEBHOOKS_API_KEY: API_KEY });

async function json(args: readonly string[]): Promise<Record<string, unknown>> {
  const result = await runCli(["--json", ...args], asClient());
  if (result.code !== 0) throw new Error(`webhooks ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

test("subscriptions create and update set custom headers and a filter", async (t) => {
  const filter = { Currency: { $in: ["EUR", "CHF"] } };
  const created = await json([
    "subscriptions",
    "create",
    "--event",
    "Order.Created",
    "--url",
    receiver.url,
    "--header",
    "X-Api-Key: s3cr3t: with a colon",
    "--header",
    "X-Tenant:acme",
    "--filter",
    JSON.stringify(filter),
  ]);
  t.deepEqual(created.headers, { "X-Api-Key": "s3cr3t: with a colon", "X-Tenant": "acme" });
  t.deepEqual(created.filter, filter);
  const id = String(created.id);

  const shown = await runCli(["subscriptions", "get", id], asClient());
  t.is(shown.code, 0, shown.stderr);
  t.regex(shown.stdout, /header\s+X-Api-Key: ••••/);
  t.regex(shown.stdout, /filter\s+\{"Currency":\{"\$in":\["EUR","CHF"\]\}\}/);
  t.false(shown.stdout.includes("s3cr3t"));

  const { jobId } = (await json(["trigger-sample", "--event", "Order.Created", "--url", receiver.url])) as { jobId: string };
  const sample = await receiver.waitForJob(jobId);
  t.is(sample.headers["x-api-key"], "s3cr3t: with a colon");

  const replaced = await json(["subscriptions", "update", id, "--header", "X-Other: 1", "--filter", "{}"]);
  t.deepEqual(replaced.headers, { "X-Other": "••••" });
  t.is(replaced.filter, undefined, "'{}' removes the filter");
  const cleared = await json(["subscriptions", "update", id, "--clear-headers"]);
  t.deepEqual(cleared.headers ?? {}, {});

  const badJson = await runCli(["subscriptions", "update", id, "--filter", "{Currency: EUR}"], asClient());
  t.not(badJson.code, 0);
  t.regex(badJson.stderr, /--filter.*a JSON object/);
  const badHeader = await runCli(["subscriptions", "update", id, "--header", "no colon"], asClient());
  t.not(badHeader.code, 0);
  t.regex(badHeader.stderr, /"Name: value"/);
  const reserved = await runCli(["subscriptions", "update", id, "--header", "X-Signature: forged"], asClient());
  t.is(reserved.code, 1);
  t.regex(reserved.stderr, /headers\."X-Signature": the service sets this header itself.*\(invalid_argument\)/);
  const unknown = await runCli(["subscriptions", "update", id, "--filter", '{"TotalAmount": {"$foo": 1}}'], asClient());
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /filter\.TotalAmount: unknown operator \$foo/);
});
