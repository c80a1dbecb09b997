import test from "ava";
import { verifyBody } from "../../src/domain/signature.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, serviceOn } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

for (const target of storeTargets()) {
  test.serial(`${target.name}: the spec's integration flow over REST, signed delivery and retries`, async (t) => {
    const healthy = await Receiver.start();
    const refusing = await Receiver.start(() => ({ status: 400, body: "bad request" }));
    t.teardown(async () => {
      await healthy.close();
      await refusing.close();
    });
    const { baseUrl } = await serviceOn(t, target);

    // 1. List the events available to the client.
    const events = await rest(baseUrl, "GET", "/api/webhookSubscription/events");
    t.is(events.status, 200);
    const list = events.json.events as Array<{ name: string; description: string }>;
    t.true(list.length >= 3);
    const orderCreated = list.find((e) => e.name === "Order.Created");
    t.truthy(orderCreated?.description);
    for (const event of list) t.regex(event.name, /^[A-Za-z0-9]+\.[A-Za-z0-9]+$/);

    // 2. Create a subscription; the response carries the signature key.
    const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Created", url: healthy.url });
    t.is(created.status, 200, created.text);
    const subscription = created.json as {
      id: string;
      event: string;
      url: string;
      signatureKey: string;
      createdAt: string;
      enabled: boolean;
    };
    t.regex(subscription.id, /^sub_[0-9a-f]{32}$/);
    t.is(subscription.event, "Order.Created");
    t.is(subscription.url, healthy.url);
    t.true(subscription.enabled);
    t.regex(subscription.signatureKey, /^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
    t.true(Math.abs(Date.parse(subscription.createdAt) - Date.now()) < 60_000);

    // 4. Trigger a sample notification to that URL.
    const triggered = await rest(baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Order.Created",
      url: healthy.url,
    });
    t.is(triggered.status, 200, triggered.text);
    const jobId = triggered.json.jobId as string;
    t.regex(jobId, /^ntf_[0-9a-f]{32}$/);

    // 5–8. The receiver gets a signed JSON POST with the job headers.
    const [delivery] = await healthy.waitFor(1);
    t.truthy(delivery);
    if (!delivery) return;
    t.is(delivery.method, "POST");
    t.is(delivery.path, "/baseWebhookNotification");
    t.is(delivery.headers["content-type"], "application/json");
    t.is(delivery.headers["x-jobid"], jobId);
    t.is(delivery.headers["x-jobattempt"], "0");
    const signature = delivery.headers["x-signature"] as string;
    t.regex(signature, /^[A-Za-z0-9+/]+=*$/);
    t.true(verifyBody(delivery.body, signature, subscription.signatureKey), "X-Signature verifies with signatureKey");
    t.false(verifyBody(`${delivery.body} `, signature, subscription.signatureKey), "a changed body does not verify");
    const body = JSON.parse(delivery.body) as Record<string, unknown>;
    t.is(body.Event, "Order.Created");
    t.regex(body.Timestamp as string, TIMESTAMP);
    t.is(body.OrderId, "ord_1001", "the event's own sample fields follow the base fields");
    t.deepEqual(Object.keys(body).slice(0, 2), ["Event", "Timestamp"]);

    // A receiver answering 400 gets attempts 0..5 of one job, then nothing.
    const refused = await rest(baseUrl, "POST", "/api/webhookSubscription", { event: "Payment.Failed", url: refusing.url });
    t.is(refused.status, 200, refused.text);
    const retried = await rest(baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Payment.Failed",
      url: refusing.url,
    });
    t.is(retried.status, 200, retried.text);
    const attempts = await refusing.waitFor(6);
    t.deepEqual(
      attempts.map((a) => a.headers["x-jobattempt"]),
      ["0", "1", "2", "3", "4", "5"],
    );
    t.true(attempts.every((a) => a.headers["x-jobid"] === retried.json.jobId));
    t.true(
      attempts.every((a) => a.body === attempts[0]?.body),
      "every attempt re-sends the identical body",
    );
    const refusedKey = (refused.json as { signatureKey: string }).signatureKey;
    t.true(attempts.every((a) => verifyBody(a.body, a.headers["x-signature"] as string, refusedKey)));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    t.is(refusing.requests.length, 6, "nothing after the fifth retry");
    t.is(healthy.requests.length, 1, "a 200 is not retried");
  });
}
