import { readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { type CliResult, linesOf, runCli, spawnCli } from "../helpers/cli.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, API_KEY, sharedService } from "../helpers/service.js";

const running = sharedService(test);
// A path ending in /failing answers 500; tests run side by side, and only one uses it.
const receiver = Receiver.shared(test, (request) => (request.path.endsWith("/failing") ? { status: 500 } : { status: 200, body: "ok" }));

const asClient = () => ({ WEBHOOKS_URL: running.baseUrl, WEBHOOKS_API_KEY: API_KEY });
const asAdmin = () => ({ WEBHOOKS_URL: running.baseUrl, WEBHOOKS_ADMIN_TOKEN: ADMIN_TOKEN });

/** Runs a command with --json; its stdout parsed. */
async function json(args: readonly string[], env: Record<string, string>, input = ""): Promise<Record<string, unknown>> {
  const result = await runCli(["--json", ...args], env, input);
  if (result.code !== 0) throw new Error(`webhooks ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

async function deliveredJob(subscriptionId: string, jobId: string): Promise<Record<string, unknown>> {
  await receiver.waitForJob(jobId);
  for (;;) {
    const notification = await json(["deliveries", "get", subscriptionId, jobId], asClient());
    if (notification.status !== "NOTIFICATION_STATUS_PENDING") return notification;
    await receiver.waitFor(receiver.requests.length + 1, 2_000).catch(() => {});
  }
}

test("subscriber commands: events, subscriptions, trigger-sample, the delivery log, redeliver, recover", async (t) => {
  const events = await json(["events"], asClient());
  t.true((events.events as { name: string }[]).some((event) => event.name === "Order.Created"));

  const created = await json(
    ["subscriptions", "create", "--event", "Order.Created", "--url", receiver.url, "--description", "cli"],
    asClient(),
  );
  const id = String(created.id);
  t.regex(String(created.signatureKey), /BEGIN PUBLIC KEY/);
  const listed = await json(["subscriptions", "list"], asClient());
  t.true((listed.subscriptions as { id: string }[]).some((subscription) => subscription.id === id));
  t.is((await json(["subscriptions", "get", id], asClient())).description, "cli");
  t.is((await json(["subscriptions", "update", id, "--description", "changed"], asClient())).description, "changed");
  t.is((await json(["subscriptions", "update", id, "--rate-limit", "50"], asClient())).rateLimitPerSecond, 50);
  t.is((await json(["subscriptions", "update", id, "--rate-limit", "0"], asClient())).rateLimitPerSecond ?? 0, 0, "0 lifts the limit");

  const { jobId } = (await json(["trigger-sample", "--event", "Order.Created", "--url", receiver.url], asClient())) as { jobId: string };
  const notification = await deliveredJob(id, jobId);
  t.is(notification.status, "NOTIFICATION_STATUS_DELIVERED");
  t.is((notification.attempts as { statusCode: number }[])[0]?.statusCode, 200);
  const log = await json(["deliveries", "list", id, "--status", "delivered"], asClient());
  t.deepEqual(
    (log.notifications as { id: string }[]).map((each) => each.id),
    [jobId],
  );

  const between = new Date().toISOString();
  const redelivered = await json(["redeliver", id, jobId], asClient());
  t.regex(String(redelivered.jobId), /^ntf_/);
  t.not(redelivered.jobId, jobId);
  await receiver.waitForJob(String(redelivered.jobId));

  // The log's filters: by event, and by creation time on either side of the redelivery.
  const logIds = async (...filters: string[]) =>
    ((await json(["deliveries", "list", id, ...filters], asClient())).notifications as { id: string }[] | undefined)?.map(
      (each) => each.id,
    ) ?? [];
  t.deepEqual(await logIds("--event", "Order.Created"), [String(redelivered.jobId), jobId]);
  t.deepEqual(await logIds("--event", "Order.Shipped"), []);
  t.deepEqual(await logIds("--since", between), [String(redelivered.jobId)]);
  t.deepEqual(await logIds("--until", between), [jobId]);
  const badTime = await runCli(["deliveries", "list", id, "--since", "yesterday"], asClient());
  t.is(badTime.code, 1);
  t.regex(badTime.stderr, /--since must be a time such as/);

  // A receiver that fails: two failed notifications, then recover sends both again.
  const since = new Date().toISOString();
  const failingUrl = receiver.url.replace("/baseWebhookNotification", "/failing");
  const failing = await json(["subscriptions", "create", "--event", "Order.Shipped", "--url", failingUrl], asClient());
  const failed = [];
  for (let index = 0; index < 2; index++) {
    const sample = (await json(["trigger-sample", "--event", "Order.Shipped", "--url", failingUrl], asClient())) as { jobId: string };
    failed.push(sample.jobId);
  }
  for (const job of failed) t.is((await deliveredJob(String(failing.id), job)).status, "NOTIFICATION_STATUS_FAILED");
  const recovered = await json(["recover", String(failing.id), "--since", since], asClient());
  t.is((recovered.jobIds as string[]).length, 2);
  for (const job of recovered.jobIds as string[]) await receiver.waitForJob(job);

  const rotated = await json(["subscriptions", "rotate-key", id], asClient());
  t.regex(String(rotated.nextSignatureKey), /BEGIN PUBLIC KEY/);
  const confirmed = await json(["subscriptions", "confirm-rotation", id], asClient());
  t.is(confirmed.signatureKey, rotated.nextSignatureKey);
  t.deepEqual(await json(["subscriptions", "delete", id], asClient()), { deleted: id });
});

test("readable output without --json: a table with a header row", async (t) => {
  const result = await runCli(["events"], asClient());
  t.is(result.code, 0, result.stderr);
  const [header, ...rows] = result.stdout.trimEnd().split("\n");
  t.regex(header ?? "", /^EVENT\s+DESCRIPTION$/);
  t.true(rows.some((row) => row.startsWith("Order.Created ")));
  t.false(result.stdout.includes("\u001b["), "no colours off a terminal");
});

test("tail streams activities as they happen, one JSON object per line", async (t) => {
  const created = await json(["subscriptions", "create", "--event", "Payment.Succeeded", "--url", receiver.url], asClient());
  const tail = spawnCli(["--json", "tail", "--subscription", String(created.id)], asClient());
  let stderr = "";
  const watching = new Promise<void>((resolve) =>
    tail.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes("watching ")) resolve();
    }),
  );
  try {
    const lines = linesOf(tail)[Symbol.asyncIterator]();
    const first = lines.next();
    // "watching …" on stderr: the watch is in place, nothing triggered from now on is missed.
    await watching;
    const { jobId } = (await json(["trigger-sample", "--event", "Payment.Succeeded", "--url", receiver.url], asClient())) as {
      jobId: string;
    };
    const kinds: string[] = [];
    let next = await first;
    for (; !next.done; next = await lines.next()) {
      const activity = JSON.parse(next.value) as { kind: string; jobId: string };
      t.is(activity.jobId, jobId);
      kinds.push(activity.kind);
      if (activity.kind === "DELIVERY_ACTIVITY_KIND_DELIVERED") break;
    }
    t.deepEqual(kinds, [
      "DELIVERY_ACTIVITY_KIND_ACCEPTED",
      "DELIVERY_ACTIVITY_KIND_ATTEMPT_STARTED",
      "DELIVERY_ACTIVITY_KIND_ATTEMPT_FINISHED",
      "DELIVERY_ACTIVITY_KIND_DELIVERED",
    ]);
  } finally {
    tail.kill("SIGINT");
  }
});

test("admin commands: clients, api-keys, event-types, publish from stdin and from a file", async (t) => {
  const created = await json(["clients", "create", "CLI tenant"], asAdmin());
  const clientId = String((created.client as { id: string }).id);
  t.regex(String((created.apiKey as { key: string }).key), /\S{16,}/);
  const clients = await json(["clients", "list"], asAdmin());
  t.true((clients.clients as { id: string }[]).some((client) => client.id === clientId));
  const key = await json(["api-keys", "create", clientId], asAdmin());
  const keyId = String((key.apiKey as { id: string }).id);
  t.deepEqual(await json(["api-keys", "revoke", clientId, keyId], asAdmin()), { revoked: keyId });

  const sample = join(tmpdir(), `wh-cli-sample-${process.pid}.json`);
  await writeFile(sample, JSON.stringify({ TicketId: "t-1" }));
  t.teardown(() => rm(sample, { force: true }));
  const registered = await json(
    ["event-types", "register", "Ticket.Opened", "--description", "A ticket was opened.", "--sample", sample],
    asAdmin(),
  );
  t.is(registered.name, "Ticket.Opened");
  t.is((await json(["event-types", "update", "Ticket.Opened", "--description", "Opened."], asAdmin())).description, "Opened.");
  const types = await json(["event-types", "list"], asAdmin());
  t.true((types.eventTypes as { name: string }[]).some((type) => type.name === "Ticket.Opened"));

  // The new client subscribes with its key; publishing reaches it.
  const tenant = { WEBHOOKS_URL: running.baseUrl, WEBHOOKS_API_KEY: String((created.apiKey as { key: string }).key) };
  await json(["subscriptions", "create", "--event", "Ticket.Opened", "--url", receiver.url], tenant);
  const published = await json(["publish", "Ticket.Opened", "--client", clientId], asAdmin(), JSON.stringify({ TicketId: "t-42" }));
  const [jobId] = published.jobIds as string[];
  const request = await receiver.waitForJob(String(jobId));
  t.like(JSON.parse(request.body), { Event: "Ticket.Opened", TicketId: "t-42" });
  const fromFile = await json(["publish", "Ticket.Opened", "--client", clientId, "--payload", sample], asAdmin());
  t.is((fromFile.jobIds as string[]).length, 1);
});

test("errors: one line with the service's message, exit code 1", async (t) => {
  const notFound: CliResult = await runCli(["subscriptions", "get", "sub_doesnotexist"], asClient());
  t.is(notFound.code, 1);
  t.regex(notFound.stderr, /^error: .*not found.* \(not_found\)\n$/);
  const badKey = await runCli(["events"], { WEBHOOKS_URL: running.baseUrl, WEBHOOKS_API_KEY: "wrong-key-0123456789" });
  t.is(badKey.code, 1);
  t.regex(badKey.stderr, /^error: .* \(unauthenticated\)\n$/);
  const noKey = await runCli(["events"], { WEBHOOKS_URL: running.baseUrl });
  t.is(noKey.code, 1);
  t.is(noKey.stderr, "error: no API key: pass --api-key or set WEBHOOKS_API_KEY\n");
  const order = JSON.stringify({ OrderId: "ord_1", CustomerId: "cus_1", TotalAmount: 1, Currency: "EUR" });
  const unknownClient = await runCli(["publish", "Order.Created", "--client", "cli_…"], asAdmin(), order);
  t.is(unknownClient.code, 1);
  t.regex(unknownClient.stderr, /^error: client "cli_…" not found.* \(not_found\)\n$/);
  const badPayload = await runCli(["publish", "Order.Created", "--client", "cli_x"], asAdmin(), "not json");
  t.is(badPayload.code, 1);
  t.regex(badPayload.stderr, /^error: the payload is not JSON/);
});

test("--version prints the package's version", async (t) => {
  const { version } = JSON.parse(await readFile("package.json", "utf8")) as { version: string };
  const result = await runCli(["--version"], {});
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout, `${version}\n`);
});

test("--server host:port means http://host:port; another scheme is refused with a hint", async (t) => {
  const hostPort = new URL(running.baseUrl).host;
  const events = await runCli(["--json", "--server", hostPort, "events"], { WEBHOOKS_API_KEY: API_KEY });
  t.is(events.code, 0, events.stderr);
  t.true((JSON.parse(events.stdout).events as { name: string }[]).some((event) => event.name === "Order.Created"));
  const ftp = await runCli(["--server", `ftp://${hostPort}`, "events"], { WEBHOOKS_API_KEY: API_KEY });
  t.is(ftp.code, 1);
  t.is(ftp.stderr, `error: not an http:// or https:// URL: ftp://${hostPort} (--server or WEBHOOKS_URL)\n`);
});

test("a service that is not there: one line asking whether it runs at that URL", async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const { port } = closed.address() as { port: number };
  await new Promise((resolve) => closed.close(resolve));
  const result = await runCli(["events"], { WEBHOOKS_URL: `127.0.0.1:${port}`, WEBHOOKS_API_KEY: API_KEY });
  t.is(result.code, 1);
  t.regex(
    result.stderr,
    new RegExp(`^error: .*ECONNREFUSED.*: is the service running at http://127\\.0\\.0\\.1:${port}\\? \\(unavailable\\)\\n$`),
  );
});

test("trigger-sample's help says the URL must be subscribed to the event", async (t) => {
  const help = await runCli(["trigger-sample", "--help"], {});
  t.is(help.code, 0);
  t.regex(help.stdout.replace(/\s+/g, " "), /--url <url> the URL of one of your enabled subscriptions to that event/);
});
