import type { ChildProcess } from "node:child_process";
import test from "ava";
import { spawnCli } from "../helpers/cli.js";
import { kill, type ServiceProcess, spawnService } from "../helpers/process.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, rest } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

/** A CLI process whose stdout and stderr are collected, with a way to wait for a line. */
function watchCli(args: string[], env: Record<string, string>) {
  const child: ChildProcess = spawnCli(args, env);
  const output = { stdout: "", stderr: "" };
  const listeners = new Set<() => void>();
  const wake = () => {
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    output.stdout += chunk.toString();
    wake();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output.stderr += chunk.toString();
    wake();
  });
  const closed = new Promise<number | null>((resolve) => child.once("close", resolve));
  const waitFor = (stream: "stdout" | "stderr", pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(output[stream])) return;
        listeners.delete(check);
        resolve();
      };
      listeners.add(check);
      void closed.then(() => {
        if (!pattern.test(output[stream])) reject(new Error(`exited before ${pattern} on ${stream}:\n${output.stdout}\n${output.stderr}`));
      });
      check();
    });
  return { child, output, closed, waitFor };
}

/** Each test starts service processes two or three times: on a busy machine that takes minutes, not ava's default two. */
const SERVICE_STARTS_TIMEOUT_MS = 5 * 60_000;

/** One service process on an embedded store kept across its restarts, on the same port. */
async function restartableService(t: { teardown: (fn: () => Promise<void>) => void; timeout: (ms: number) => void }) {
  t.timeout(SERVICE_STARTS_TIMEOUT_MS);
  const store = await storeTargets()[0]?.create();
  if (!store) throw new Error("no store target");
  const state: { service: ServiceProcess } = { service: await spawnService(store.env) };
  const port = new URL(state.service.baseUrl).port;
  t.teardown(async () => {
    await kill(state.service, "SIGKILL");
    await store.cleanup();
  });
  return {
    baseUrl: state.service.baseUrl,
    stop: () => kill(state.service, "SIGTERM"),
    start: async () => {
      state.service = await spawnService({ ...store.env, PORT: port });
    },
  };
}

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
