import test from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { hashApiKey } from "../../src/domain/api-keys.js";
import { newId } from "../../src/domain/ids.js";
import { KeySealer } from "../../src/domain/key-sealing.js";
import { buildNotificationBody } from "../../src/domain/notification-body.js";
import { verifyBody } from "../../src/domain/signature.js";
import { openStore } from "../../src/store/open-store.js";
import { Receiver } from "../helpers/receiver.js";
import { FAST_TEST_ENV, rest, startTestService } from "../helpers/service.js";
import { notOnMongo, storeTargets } from "../helpers/stores.js";
import { signedSubscription } from "../helpers/subscriptions.js";

for (const target of storeTargets()) {
  test.serial(`${target.name}: a scheduled retry survives a stop and start and is delivered after it`, async (t) => {
    const store = await target.create();
    const env = { ...store.env, RETRY_SCHEDULE: "2s,2s,2s,2s,2s" };
    const receiver = await Receiver.start(() => ({ status: 503, body: "down for maintenance" }));
    let running = await startTestService(env);
    t.teardown(async () => {
      await running.service.stop();
      await receiver.close();
      await store.cleanup();
    });

    const created = await rest(running.baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Created", url: receiver.url });
    t.is(created.status, 200, created.text);
    const triggered = await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Order.Created",
      url: receiver.url,
    });
    t.is(triggered.status, 200, triggered.text);
    const [first] = await receiver.waitFor(1);
    t.is(first?.headers["x-jobattempt"], "0");

    // The retry is due in 2 s; the service goes away before that.
    await running.service.stop();
    receiver.respond = () => ({ status: 200 });
    running = await startTestService(env);

    const [, second] = await receiver.waitFor(2, 15_000);
    t.is(second?.headers["x-jobid"], triggered.json.jobId as string);
    t.is(second?.headers["x-jobattempt"], "1");
    t.is(second?.body, first?.body);
    t.true(verifyBody(second?.body ?? "", second?.headers["x-signature"] as string, created.json.signatureKey as string));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    t.is(receiver.requests.length, 2, "delivered once after the restart, not again");
  });

  // What an older version left after a crash between storing and queueing: a notification with no job.
  if (target.name === "mongodb")
    notOnMongo(test, "a notification an older version accepted but never queued is delivered at the next start");
  else
    test.serial(`${target.name}: a notification an older version accepted but never queued is delivered at the next start`, async (t) => {
      const store = await target.create();
      const receiver = await Receiver.start();
      t.teardown(async () => {
        await receiver.close();
        await store.cleanup();
      });

      const config = loadConfig({ ...FAST_TEST_ENV, ...store.env });
      const opened = await openStore(config.store, pino({ level: "silent" }));
      if (opened.database.kind !== "postgres") return t.fail("a SQL target");
      const client = await opened.store.clients.ensureWithKey("orphans", hashApiKey("orphan-key-0123456789"));
      const sealer = new KeySealer(config.signingMasterKey as Buffer);
      const subscription = await signedSubscription(sealer, client.id, receiver.url);
      await opened.store.subscriptions.insert(subscription);
      const acceptedAt = new Date(Date.now() - 120_000);
      const notificationId = newId("ntf");
      const body = buildNotificationBody("Order.Created", { OrderId: "ord_lost" }, acceptedAt);
      await opened.database.api.query(
        `INSERT INTO wh_notifications (id, subscription_id, client_id, event, body, status, attempt_count, scheduled, created_at, updated_at)
         VALUES ($1, $2, $3, 'Order.Created', $4, 'pending', 0, false, $5, $5)`,
        [notificationId, subscription.id, client.id, body, acceptedAt],
      );
      await opened.close();

      const running = await startTestService(store.env);
      t.teardown(() => running.service.stop());
      const [delivery] = await receiver.waitFor(1);
      t.is(delivery?.headers["x-jobid"], notificationId);
      t.is(delivery?.body, body);
      t.true(verifyBody(body, delivery?.headers["x-signature"] as string, subscription.publicKeyPem));
    });
}
