import { rm } from "node:fs/promises";
import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { eventually } from "../helpers/eventually.js";
import { LazyFs, lazyFsUnavailable } from "../helpers/lazy-fs.js";
import { kill, type ServiceProcess, spawnService } from "../helpers/process.js";
import { Receiver } from "../helpers/receiver.js";
import { rest } from "../helpers/service.js";
import { embeddedDataDir } from "../helpers/stores.js";

/** Publishing callers at once: their commits share flushes. */
const PUBLISHERS = 8;
/** Acknowledged publishes before the service is stopped cleanly and started again. */
const ACKNOWLEDGED_BEFORE_STOP = 40;
/** Then the power is cut once this many more were acknowledged, with others in flight. */
const ACKNOWLEDGED_BEFORE_CUT = 120;

const unavailable = lazyFsUnavailable();
const powerCut = unavailable ? test.skip : test.serial;

const DELIVERED = "NOTIFICATION_STATUS_DELIVERED";

powerCut(
  `pglite: a power cut loses no acknowledged notification, and leaves none pending for good${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  async (t) => {
    t.timeout(300_000);
    const seed = await embeddedDataDir();
    const disk = await LazyFs.mount(seed);
    // While publishing the receiver answers slowly: most acknowledged notifications are still to send after the cut.
    let slow = true;
    const receiver = await Receiver.start(() => (slow ? { status: 200, delayMs: 1000 } : { status: 200 }));
    // No SIGNING_MASTER_KEY: the key that seals the subscription's signing key is made under DATA_DIR, on the same disk.
    const env = { DATA_DIR: disk.path, DELIVERY_CONCURRENCY: "2", SIGNING_MASTER_KEY: "" };
    let service: ServiceProcess | undefined;
    t.teardown(async () => {
      if (service) await kill(service, "SIGKILL");
      await receiver.close();
      await disk.unmount();
      await rm(seed, { recursive: true, force: true });
    });

    service = await spawnService(env);
    const client = await createClient(service.baseUrl, "Power cut");
    const subscription = await rest(
      service.baseUrl,
      "POST",
      "/api/webhookSubscription",
      { event: "Order.Shipped", url: `${receiver.url}/power` },
      client.auth,
    );
    t.is(subscription.status, 200, subscription.text);
    const subscriptionId = subscription.json.id as string;

    const acknowledged: string[] = [];
    let sent = 0;
    /** Publishes from `PUBLISHERS` callers at once until `count` more are acknowledged, then ends the service by `stop`. */
    const publishThenStop = async (count: number, stop: () => Promise<void>) => {
      const running = service as ServiceProcess;
      const target = acknowledged.length + count;
      let stopped = false;
      const publisher = async () => {
        while (!stopped) {
          const published = await rest(
            running.baseUrl,
            "POST",
            "/api/internal/events/publish",
            { clientId: client.id, event: "Order.Shipped", payload: { OrderId: `ord_${sent++}` } },
            adminAuth,
          ).catch(() => undefined);
          // Only a 200 acknowledges; a call cut short promised nothing.
          if (published?.status === 200) acknowledged.push(...(published.json.jobIds as string[]));
          if (acknowledged.length >= target && !stopped) {
            stopped = true;
            await stop();
          }
        }
      };
      await Promise.all(Array.from({ length: PUBLISHERS }, publisher));
    };

    // A clean stop first: its checkpoint writes the data files, and the WAL before it may go.
    await publishThenStop(ACKNOWLEDGED_BEFORE_STOP, () => kill(service as ServiceProcess, "SIGTERM"));
    service = await spawnService(env);
    const statusOf = async (baseUrl: string, id: string) =>
      (await rest(baseUrl, "GET", `/api/webhookSubscription/${subscriptionId}/notifications/${id}`, undefined, client.auth)).json
        .status as string;
    // Then the power cut, once publishing stopped and a few more deliveries were recorded after the last publish: their
    // bookkeeping commits did not wait for the disk, and no publish's commit flushed it since.
    const deliveredBeforeCut: string[] = [];
    await publishThenStop(ACKNOWLEDGED_BEFORE_CUT, async () => {
      const running = (service as ServiceProcess).baseUrl;
      const stoppedAt = Date.now();
      slow = false;
      const latest = await eventually("deliveries after the last publish", () => {
        const ids = receiver.requests.filter((r) => r.at >= stoppedAt).map((r) => r.headers["x-jobid"] as string);
        return ids.length >= 3 && ids;
      });
      for (const id of latest) await eventually(`${id} recorded as delivered`, async () => (await statusOf(running, id)) === DELIVERED);
      deliveredBeforeCut.push(...latest);
      await kill(service as ServiceProcess, "SIGKILL");
      await disk.loseUnsynced();
    });
    t.true(acknowledged.length >= ACKNOWLEDGED_BEFORE_STOP + ACKNOWLEDGED_BEFORE_CUT);

    // The database opens on what the disk kept; the API shows every acknowledged notification.
    const restartedAt = Date.now();
    service = await spawnService(env);
    const restarted = service.baseUrl;
    const missing: string[] = [];
    for (const id of acknowledged) {
      const found = await rest(restarted, "GET", `/api/webhookSubscription/${subscriptionId}/notifications/${id}`, undefined, client.auth);
      if (found.status !== 200) missing.push(`${id} (${found.status})`);
    }
    t.deepEqual(missing, [], "every acknowledged notification is in the database after the power cut");

    // And each one reaches the receiver (before the cut, or after it), and ends delivered: none stays pending for good.
    for (const id of acknowledged)
      await receiver.waitForRequest((r) => r.headers["x-jobid"] === id && r.status === 200, `job ${id}`, 60_000);
    for (const id of acknowledged)
      await eventually(`${id} delivered`, async () => (await statusOf(restarted, id)) === DELIVERED, { timeoutMs: 60_000 });
    const deliveredAfter = new Set(receiver.requests.filter((r) => r.at >= restartedAt).map((r) => r.headers["x-jobid"]));
    // A delivery recorded just before the cut is either still recorded or, its record lost with the cut, delivered again.
    const deliveredAgain = deliveredBeforeCut.filter((id) => deliveredAfter.has(id));
    t.log(
      `${sent} publishes sent, ${acknowledged.length} acknowledged (before a clean stop and the power cut), ${deliveredAfter.size} delivered after it; ` +
        `of ${deliveredBeforeCut.length} recorded as delivered just before the cut, ${deliveredAgain.length} delivered again`,
    );
  },
);
