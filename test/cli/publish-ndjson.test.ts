import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { createClient } from "../helpers/admin.js";
import { runCli } from "../helpers/cli.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const asAdmin = () => ({ WEBHOOKS_URL: running.baseUrl, WEBHOOKS_ADMIN_TOKEN: ADMIN_TOKEN });
const order = (n: number) => ({ OrderId: `ord_${n}`, CustomerId: "cus_1", TotalAmount: n, Currency: "EUR" });

/** A tenant subscribed to Order.Created at a new receiver. */
async function subscribedTenant(t: { teardown(fn: () => Promise<void>): void }, name: string) {
  const tenant = await createClient(running.baseUrl, name);
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const created = await rest(
    running.baseUrl,
    "POST",
    "/api/webhookSubscription",
    { event: "Order.Created", url: receiver.url },
    tenant.auth,
  );
  if (created.status !== 200) throw new Error(created.text);
  return { tenant, receiver };
}

test("publish --ndjson sends every line in batches, from stdin or a file; a repeated key answers duplicate", async (t) => {
  const { tenant, receiver } = await subscribedTenant(t, "NDJSON publisher");
  // Lines name their own client and event, or take --client and <event>; blank lines are skipped.
  const lines = [
    JSON.stringify({ clientId: tenant.id, event: "Order.Created", payload: order(1), idempotencyKey: "o-1" }),
    JSON.stringify({ payload: order(2), idempotencyKey: "o-2" }),
    "",
    JSON.stringify({ payload: order(3) }),
    JSON.stringify({ payload: order(4), idempotencyKey: "o-4" }),
    JSON.stringify({ payload: order(5), idempotencyKey: "o-5" }),
  ].join("\n");
  const fromStdin = await runCli(
    ["--json", "publish", "Order.Created", "--client", tenant.id, "--ndjson", "-", "--batch-size", "2"],
    asAdmin(),
    `${lines}\n`,
  );
  t.is(fromStdin.code, 0, fromStdin.stderr);
  const answers = fromStdin.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { jobIds: string[]; duplicate: boolean });
  t.is(answers.length, 5, "one answer per event, in order");
  t.true(answers.every((answer) => answer.jobIds.length === 1 && !answer.duplicate));
  const received = await receiver.waitFor(5);
  t.deepEqual(received.map((request) => request.headers["x-jobid"]).sort(), answers.flatMap((answer) => answer.jobIds).sort());

  const file = join(tmpdir(), `wh-cli-events-${process.pid}.ndjson`);
  await writeFile(file, lines);
  t.teardown(() => rm(file, { force: true }));
  const fromFile = await runCli(["publish", "Order.Created", "--client", tenant.id, "--ndjson", file], asAdmin());
  t.is(fromFile.code, 0, fromFile.stderr);
  t.is(fromFile.stdout, "published 5 events: 5 jobs; 4 already published\n");
});

test("publish --ndjson stops at a refused batch, naming the line, and says what went in before", async (t) => {
  const { tenant } = await subscribedTenant(t, "NDJSON refused");
  const lines = [1, 2, 3].map((n) => JSON.stringify({ payload: order(n) }));
  lines.push(JSON.stringify({ event: "Order.Nope", payload: order(4) }), JSON.stringify({ payload: order(5) }));
  const refused = await runCli(
    ["publish", "Order.Created", "--client", tenant.id, "--ndjson", "-", "--batch-size", "2"],
    asAdmin(),
    lines.join("\n"),
  );
  t.is(refused.code, 1);
  t.regex(
    refused.stderr,
    /^error: line 4: unknown event "Order\.Nope".*lines 3–4 were refused together; the 2 events before line 3 were published\) \(invalid_argument\)\n$/,
  );

  const notJson = await runCli(["publish", "--client", tenant.id, "--ndjson", "-"], asAdmin(), "{}\nnot json\n");
  t.is(notJson.code, 1);
  t.regex(notJson.stderr, /^error: line 2 is not a PublishEvent request as JSON/);
  const missing = await runCli(["publish", "--ndjson", join(tmpdir(), "wh-no-such-file.ndjson")], asAdmin());
  t.regex(missing.stderr, /^error: --ndjson: cannot read .* \(ENOENT\)\n$/);
  const tooBig = await runCli(["publish", "--ndjson", "-", "--batch-size", "501"], asAdmin());
  t.is(tooBig.stderr, "error: --batch-size must be 1 to 500, not 501\n");
  const neither = await runCli(["publish", "Order.Created"], asAdmin());
  t.regex(neither.stderr, /^error: publish needs an <event> and --client, or --ndjson/);
});
