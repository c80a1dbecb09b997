import test from "ava";
import type { DeliveryEvent } from "../../src/domain/delivery-events.js";
import { storeRun, workerSetUp } from "../helpers/worker.js";

test("the worker tells its observer of each attempt it starts and finishes, and of a subscription it disables", async (t) => {
  const events: DeliveryEvent[] = [];
  const answers = [500, 410];
  const { opened, subscription, accept, worker } = await workerSetUp(t, { observe: (event) => events.push(event) }, () => ({
    status: answers.shift() ?? 200,
  }));
  const [notification] = await accept(1, '{"Event":"Order.Created","Timestamp":"2026-01-01T00:00:00.000Z"}');
  if (!notification) return t.fail("one notification");

  t.like(await worker.attemptNext(notification.id, storeRun(opened)), { kind: "retry", retry: 1 });
  t.like(await worker.attemptNext(notification.id, storeRun(opened)), { kind: "done" });
  t.like(await worker.attemptNext(notification.id, storeRun(opened)), { kind: "done" }, "nothing left to deliver");

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

test("a read handed to the worker is used only while fresh: an old one, or one taken back, is read again", async (t) => {
  const { opened, receiver, subscription, accept, worker } = await workerSetUp(t, { observe: () => {} });
  const [fresh, old, takenBack] = await accept(3);
  if (!fresh || !old || !takenBack) return t.fail("three notifications");
  // Disabled in the store: only a kept read (saying enabled) can still send to it.
  await opened.store.subscriptions.disable(subscription.id, "paused for the test", new Date());
  worker.expect(fresh, subscription);
  worker.expect(old, subscription, Date.now() - 3_000);
  worker.expect(takenBack, subscription);
  worker.unexpect(takenBack.id);
  await worker.attemptNext(old.id, storeRun(opened));
  await worker.attemptNext(takenBack.id, storeRun(opened));
  t.is(receiver.requests.length, 0, "an old read and one taken back are read again: disabled, no request");
  await worker.attemptNext(fresh.id, storeRun(opened));
  t.is(receiver.requests.length, 1, "a fresh read is used as it is");
});
