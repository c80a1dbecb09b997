import { createRequire } from "node:module";
import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { embeddedService, rest } from "../helpers/service.js";

/**
 * patches/agenda+6.2.6.patch, applied to Agenda's job processor as npm
 * installs it: a finished job keeps no timer (Agenda's own keeps one per job
 * for half the lock lifetime: 6 s with these settings), and running jobs
 * makes no new `debug` logger per job (Agenda's own makes several, each
 * asking isatty).
 */
const NOTIFICATIONS = 60;

/** The `debug` package Agenda loads; its `init` runs for every logger it makes. */
const createDebug = createRequire(import.meta.resolve("agenda"))("debug") as { init?: (logger: unknown) => void };

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

test.serial("finished delivery jobs leave no timers behind, and no logger is made per job", async (t) => {
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const { baseUrl } = await embeddedService(t);
  const owner = await createClient(baseUrl, "Timers");
  await rest(baseUrl, "POST", "/api/internal/eventTypes", { name: "Timers.Tick", description: "a test event" }, adminAuth);
  const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event: "Timers.Tick", url: receiver.url }, owner.auth);
  t.is(created.status, 200, created.text);
  const before = timers();
  let loggersMade = 0;
  const init = createDebug.init;
  createDebug.init = (logger) => {
    loggersMade++;
    init?.(logger);
  };
  t.teardown(() => {
    createDebug.init = init;
  });
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
  // Agenda's steps each make their logger once (some may first run now); unpatched, it is several per job.
  t.true(loggersMade < NOTIFICATIONS / 4, `${loggersMade} debug loggers made for ${NOTIFICATIONS} deliveries`);
});
