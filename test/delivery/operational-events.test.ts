import test, { type ExecutionContext } from "ava";
import { verifyBody } from "../../src/domain/signature.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { postPublish, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { embeddedService, rest, serviceOn } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";

/** A Subscription.Disabled notification's body: the base fields, then the event's own. */
interface Disabled {
  Event: string;
  SubscriptionId: string;
  SubscribedEvent: string;
  Url: string;
  Cause: string;
  Reason: string;
  DisabledAt: string;
}

/** Subscribes `owner` to `event` at `url`, checking that it was created. */
async function subscribeTo(t: ExecutionContext, base: string, owner: { auth: Record<string, string> }, event: string, url: string) {
  const created = await postSubscription(base, { event, url }, owner.auth);
  t.is(created.status, 200, created.text);
  return created.json as { id: string; signatureKey: string };
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: a disabled subscription is told once, signed, to the client's Subscription.Disabled subscribers, never to itself`,
    async (t) => {
      const [gone, watcher, goneWatcher] = await Promise.all([Receiver.start(), Receiver.start(), Receiver.start()]);
      t.teardown(() => Promise.all([gone.close(), watcher.close(), goneWatcher.close()]));
      gone.respond = () => ({ status: 410, body: "gone" });
      goneWatcher.respond = () => ({ status: 410, body: "gone too" });
      const { baseUrl: base } = await serviceOn(t, target);
      const events = await rest(base, "GET", "/api/webhookSubscription/events");
      const listed = (events.json.events as Array<{ name: string; jsonSchema?: object }>).find((e) => e.name === "Subscription.Disabled");
      t.truthy(listed?.jsonSchema, "the catalog lists the operational event with its schema");

      const owner = await createClient(base, "Operations");
      const subscribe = (event: string, url: string) => subscribeTo(t, base, owner, event, url);
      const orders = await subscribe("Order.Created", gone.url);
      const told = await subscribe("Subscription.Disabled", watcher.url);
      // Takes the same events and answers 410 itself: disabled in turn, it must not hear of itself.
      const alsoGone = await subscribe("Subscription.Disabled", goneWatcher.url);

      const published = await postPublish(
        base,
        { clientId: owner.id, event: "Order.Created", payload: { OrderId: "o-1", CustomerId: "c-1", Currency: "EUR", TotalAmount: 1 } },
        adminAuth,
      );
      t.is(published.status, 200, published.text);

      const [first, second] = await watcher.waitFor(2, 30_000);
      const about = [first, second].map((request) => {
        t.true(verifyBody(request?.body ?? "", String(request?.headers["x-signature"]), told.signatureKey), "signed like any other");
        return JSON.parse(request?.body ?? "{}") as Disabled;
      });
      t.deepEqual(about.map((n) => n.SubscriptionId).sort(), [orders.id, alsoGone.id].sort(), "one about each disabled subscription");
      const aboutOrders = about.find((n) => n.SubscriptionId === orders.id);
      t.is(aboutOrders?.Event, "Subscription.Disabled");
      t.is(aboutOrders?.Cause, "gone");
      t.is(aboutOrders?.SubscribedEvent, "Order.Created");
      t.is(aboutOrders?.Url, gone.url);

      t.is(goneWatcher.requests.length, 1, "the watcher that was disabled heard of the other, once");
      t.is((JSON.parse(goneWatcher.requests[0]?.body ?? "{}") as Disabled).SubscriptionId, orders.id);
      const ownLog = await rest(base, "GET", `/api/webhookSubscription/${alsoGone.id}/notifications`, undefined, owner.auth);
      t.is((ownLog.json.notifications as unknown[]).length, 1, "nothing about itself was queued for it");
      t.is(gone.requests.length, 1, "410 Gone: no retries");
    },
  );
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: a failure streak reaching FAILING_NOTICE_AFTER is told once, to the client's Subscription.Failing subscribers`,
    async (t) => {
      const [failing, watcher] = await Promise.all([Receiver.start(), Receiver.start()]);
      t.teardown(() => Promise.all([failing.close(), watcher.close()]));
      failing.respond = () => ({ status: 500, body: "down" });
      const { baseUrl: base } = await serviceOn(t, target, { FAILING_NOTICE_AFTER: "300ms" });
      const owner = await createClient(base, "Operations");
      const subscribe = (event: string, url: string) => subscribeTo(t, base, owner, event, url);
      const down = await subscribe("Order.Shipped", failing.url);
      await subscribe("Subscription.Failing", watcher.url);
      // Two notifications, each retried five times 100 ms apart: one streak of about half a second.
      for (const n of [1, 2]) {
        const published = await postPublish(
          base,
          { clientId: owner.id, event: "Order.Shipped", payload: { OrderId: `o-${n}`, Carrier: "DHL", TrackingNumber: "1" } },
          adminAuth,
        );
        t.is(published.status, 200, published.text);
      }
      await failing.waitFor(12, 30_000);
      const [notice] = await watcher.waitFor(1, 30_000);
      const body = JSON.parse(notice?.body ?? "{}") as { Event: string; SubscriptionId: string; FailingSince: string };
      t.is(body.Event, "Subscription.Failing");
      t.is(body.SubscriptionId, down.id);
      t.true(Date.parse(body.FailingSince) <= Date.now());
      const log = await rest(base, "GET", `/api/webhookSubscription/${down.id}`, undefined, owner.auth);
      t.truthy(log.json.failingSince, "still failing, still enabled");
      t.true(log.json.enabled as boolean);
      t.is(watcher.requests.length, 1, "once for the streak, however many failures followed");
    },
  );
}

test("a key rotation entering its last hour is told once per deadline, to the client's SignatureKey.RotationEnding subscribers", async (t) => {
  const [receiver, watcher] = await Promise.all([Receiver.start(), Receiver.start()]);
  t.teardown(() => Promise.all([receiver.close(), watcher.close()]));
  const { baseUrl: base } = await embeddedService(t, { KEY_ROTATION_GRACE: "30m" });
  const owner = await createClient(base, "Operations");
  const subscribe = (event: string, url: string) => subscribeTo(t, base, owner, event, url);
  const rotating = await subscribe("Order.Created", receiver.url);
  await subscribe("SignatureKey.RotationEnding", watcher.url);
  const rotate = async () => {
    const rotated = await rest(base, "POST", `/api/webhookSubscription/${rotating.id}/rotateSignatureKey`, {}, owner.auth);
    t.is(rotated.status, 200, rotated.text);
    return String(rotated.json.rotationDeadline);
  };
  const firstDeadline = await rotate();
  const [first] = await watcher.waitFor(1, 20_000);
  const told = JSON.parse(first?.body ?? "{}") as { Event: string; SubscriptionId: string; RotationDeadline: string };
  t.is(told.Event, "SignatureKey.RotationEnding");
  t.is(told.SubscriptionId, rotating.id);
  t.is(Date.parse(told.RotationDeadline), Date.parse(firstDeadline));
  // Rotating again sets a new deadline: told again, once.
  const secondDeadline = await rotate();
  const [, second] = await watcher.waitFor(2, 20_000);
  t.is(Date.parse((JSON.parse(second?.body ?? "{}") as { RotationDeadline: string }).RotationDeadline), Date.parse(secondDeadline));
  t.is(watcher.requests.length, 2, "once per deadline, however many scans ran");
});
