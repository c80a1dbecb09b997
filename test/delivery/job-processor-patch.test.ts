import { Agenda } from "agenda";
import test from "ava";
import { PATCHED_SOURCE_SHA256, patchJobProcessorOf, sourceDigest } from "../../src/delivery/job-processor-patch.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { embeddedService, rest } from "../helpers/service.js";

/**
 * The patch of Agenda's JobProcessor.runOrRetry (src/delivery/
 * job-processor-patch.ts): it applies only to the source it was written
 * against, and with it a finished job keeps no timer (Agenda's own keeps
 * one per job for half the lock lifetime: 6 s with these settings).
 */
const NOTIFICATIONS = 60;

function timers(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length;
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return true;
}

test.serial("finished delivery jobs leave no timers behind", async (t) => {
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const { baseUrl } = await embeddedService(t);
  const owner = await createClient(baseUrl, "Timers");
  await rest(baseUrl, "POST", "/api/internal/eventTypes", { name: "Timers.Tick", description: "a test event" }, adminAuth);
  const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event: "Timers.Tick", url: receiver.url }, owner.auth);
  t.is(created.status, 200, created.text);
  const before = timers();
  for (let n = 0; n < NOTIFICATIONS; n++) {
    const published = await rest(
      baseUrl,
      "POST",
      "/api/internal/events/publish",
      { clientId: owner.id, event: "Timers.Tick", payload: { n } },
      adminAuth,
    );
    t.is(published.status, 200, published.text);
  }
  await receiver.waitFor(NOTIFICATIONS, 30_000);
  // Well under the 6 s an unpatched liveness check sleeps, and one timer per job would be far above the margin.
  const settled = await until(() => timers() <= before + NOTIFICATIONS / 4, 3_000);
  t.true(settled, `${timers()} timers active, ${before} before ${NOTIFICATIONS} deliveries`);
});

test("the patch applies only to the runOrRetry it was written against", (t) => {
  class ChangedProcessor {
    stopped = false;
    runOrRetry() {
      return Promise.resolve("a different method");
    }
    stop() {
      this.stopped = true;
    }
  }
  const agenda = new Agenda({
    backend: { name: "unused", repository: {} as never, ownsConnection: false, connect: async () => {}, disconnect: async () => {} },
  });
  patchJobProcessorOf(agenda);
  t.not(sourceDigest(ChangedProcessor.prototype.runOrRetry), PATCHED_SOURCE_SHA256);
  const changed = new ChangedProcessor();
  const error = t.throws(() => {
    (agenda as unknown as { jobProcessor: unknown }).jobProcessor = changed;
  });
  t.regex(error?.message ?? "", /is not the one src\/delivery\/job-processor-patch\.ts replaces/);
  t.true(changed.stopped, "the processor its constructor started is stopped, not left polling");
  t.is(ChangedProcessor.prototype.runOrRetry.name, "runOrRetry", "left as it was");
});
