import test from "ava";
import { watchCli } from "../helpers/cli.js";
import { restartableService } from "../helpers/process.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, rest } from "../helpers/service.js";

test.serial("tail waits out a restart of the service, then goes on showing deliveries", async (t) => {
  const service = await restartableService(t);
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const created = await rest(service.baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Created", url: receiver.url });
  const subscriptionId = String(created.json.id);
  const tail = watchCli(["tail", "--subscription", subscriptionId], { WEBHOOKS_URL: service.baseUrl, WEBHOOKS_API_KEY: API_KEY });
  t.teardown(() => void tail.child.kill("SIGKILL"));
  await tail.waitFor("stderr", /watching /);

  await service.stop();
  await tail.waitFor("stderr", /reconnecting \(Ctrl-C to stop\)/);
  t.is(tail.child.exitCode, null, "tail is still running");
  await service.start();
  await tail.waitFor("stderr", /watching again/);
  const sample = await rest(service.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
    event: "Order.Created",
    url: receiver.url,
  });
  await tail.waitFor("stdout", new RegExp(`${sample.json.jobId}\\s+delivered`));

  tail.child.kill("SIGINT");
  t.is(await tail.closed, 0);
});

test.serial("listen forwards again after a restart; stopped while the service is away, it says it could not clean up", async (t) => {
  const service = await restartableService(t);
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const env = { WEBHOOKS_URL: service.baseUrl, WEBHOOKS_API_KEY: API_KEY };
  const listen = watchCli(["--json", "listen", "--forward-to", receiver.url, "--events", "Order.Created"], env);
  t.teardown(() => void listen.child.kill("SIGKILL"));
  await listen.waitFor("stdout", /"subscriptions"/);
  const relay = (JSON.parse(listen.output.stdout.split("\n")[0] ?? "") as { subscriptions: { id: string; url: string }[] })
    .subscriptions[0];
  if (!relay) throw new Error("no relay printed");

  await service.stop();
  await listen.waitFor("stderr", /reconnecting \(Ctrl-C to stop\)/);
  await service.start();
  await listen.waitFor("stderr", /forwarding again/);
  const sample = await rest(service.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
    event: "Order.Created",
    url: relay.url,
  });
  await receiver.waitForJob(String(sample.json.jobId));

  // Stopped while the service is away: the relay cannot be removed, and listen says so.
  await service.stop();
  await listen.waitFor("stderr", /reconnecting \(Ctrl-C to stop\)/);
  listen.child.kill("SIGINT");
  t.is(await listen.closed, 1);
  t.regex(listen.output.stderr, new RegExp(`error: could not remove the temporary relay subscription ${relay.id}`));
  t.notRegex(listen.output.stderr, /temporary relay subscriptions removed/);
});
