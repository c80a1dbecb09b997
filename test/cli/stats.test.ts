import { setTimeout as sleep } from "node:timers/promises";
import test from "ava";
import { runCli } from "../helpers/cli.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, API_KEY, rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);

test("webhooks stats prints the client's own figures with its key, and every client's with the admin token", async (t) => {
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const asClient = { WEBHOOKS_URL: running.baseUrl, WEBHOOKS_API_KEY: API_KEY };
  const asAdmin = { WEBHOOKS_URL: running.baseUrl, WEBHOOKS_ADMIN_TOKEN: ADMIN_TOKEN };
  const subscribed = await rest(running.baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Created", url: receiver.url });
  t.is(subscribed.status, 200, subscribed.text);
  for (let i = 0; i < 2; i++) {
    const sample = await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Order.Created",
      url: receiver.url,
    });
    t.is(sample.status, 200, sample.text);
  }

  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await runCli(["--json", "stats"], asClient);
    t.is(result.code, 0, result.stderr);
    const totals = (JSON.parse(result.stdout) as { stats: { totals: { delivered?: string } } }).stats.totals;
    if (totals.delivered === "2") break;
    if (Date.now() > deadline) throw new Error(`never delivered: ${result.stdout}`);
    await sleep(200);
  }

  const origin = new URL(receiver.url).origin;
  const own = await runCli(["stats"], asClient);
  t.is(own.code, 0, own.stderr);
  t.regex(own.stdout, /^the last hour, per minute \(this client\)$/m);
  t.regex(own.stdout, /^accepted\s+2$/m);
  t.regex(own.stdout, /^delivered\s+2$/m);
  t.regex(own.stdout, /^attempts\s+2 \(0 failed\)$/m);
  t.regex(own.stdout, new RegExp(`${origin.replaceAll(".", "\\.")}\\s+100\\.0%\\s+\\d+\\s+2`));

  const operator = await runCli(["stats", "--range", "7d"], asAdmin);
  t.is(operator.code, 0, operator.stderr);
  t.regex(operator.stdout, /^the last 7 days, per hour \(every client\)$/m);
  t.true(operator.stdout.includes(origin));

  const wrong = await runCli(["stats", "--range", "2h"], asClient);
  t.is(wrong.code, 1);
  t.regex(wrong.stderr, /^error: range must be one of 1h, 24h, 7d \(got "2h"\) \(invalid_argument\)$/m);
});
