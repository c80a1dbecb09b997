import test from "ava";
import type { DeliveryEvent } from "../../src/domain/delivery-events.js";
import { workerSetUp } from "../helpers/worker.js";

test("the worker tells its observer of each attempt it starts and finishes, and of a subscription it disables", async (t) => {
  const events: DeliveryEvent[] = [];
  const answers = [500, 410];
  const { opened, subscription, accept, attempt } = await workerSetUp(t, { observe: (event) => events.push(event) }, () => ({
    status: answers.shift() ?? 200,
  }));
  const [notification] = await accept(1, '{"Event":"Order.Created","Timestamp":"2026-01-01T00:00:00.000Z"}');
  if (!notification) return t.fail("one notification");

  t.is(await attempt(notification.id), "done");
  t.like(await opened.store.notifications.get(notification.id), { status: "pending", attemptCount: 1 }, "a retry is due");
  t.is(await attempt(notification.id), "done");
  t.is(await attempt(notification.id), "done", "nothing left to deliver");
  t.like(await opened.store.notifications.get(notification.id), { status: "failed", attemptCount: 2 });

  t.deepEqual(
    events.map((event) => event.kind),
    ["attempt-started", "attempt-finished", "attempt-started", "attempt-finished", "subscription-disabled"],
  );
  const [started, retried, , gone, disabled] = events;
  t.like(started, { kind: "attempt-started", attempt: 0, notification: { id: notification.id } });
  t.like(retried, { kind: "attempt-finished", status: "pending", sent: true, attempt: { attempt: 0, statusCode: 500, succeeded: false } });
  t.like(gone, { kind: "attempt-finished", status: "failed", attempt: { attempt: 1, statusCode: 410 } });
  t.like(disabled, { kind: "subscription-disabled", cause: "gone", subscription: { id: subscription.id } });
  t.regex((disabled as { reason: string }).reason, /410 Gone/);
  for (const event of events) t.true(event.at instanceof Date);
});

test("the worker sends what it is given to read: a subscription read as disabled, or a notification read as ended, sends nothing", async (t) => {
  const { opened, receiver, subscription, accept, attempt } = await workerSetUp(t, { observe: () => {} });
  const [disabled, delivered] = await accept(2);
  if (!disabled || !delivered) return t.fail("two notifications");
  t.is(await attempt(disabled.id, { subscription: { ...subscription, enabled: false } }), "done");
  t.like(await opened.store.notifications.get(disabled.id), { status: "failed", attemptCount: 1 }, "abandoned, recorded as failed");
  t.is(await attempt(delivered.id), "done");
  t.is(receiver.requests.length, 1, "the enabled one is sent");
  t.is(await attempt(delivered.id), "done", "its job is gone: nothing to send");
  t.is(receiver.requests.length, 1);
});
