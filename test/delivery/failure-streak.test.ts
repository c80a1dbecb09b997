import test from "ava";
import { countCalls } from "../helpers/count-calls.js";
import { workerSetUp } from "../helpers/worker.js";

const failing = () => ({ status: 500 });

test("a failure streak is written as it starts: a failure of a subscription read as failing already writes nothing", async (t) => {
  const { opened, subscription, accept, attempt } = await workerSetUp(t, { observe: () => {} }, failing);
  const [first, second, third] = await accept(3);
  if (!first || !second || !third) return t.fail("three notifications");
  const streak = () => opened.store.subscriptions.get(subscription.id).then((read) => read?.failingSince);

  await attempt(first.id);
  const started = await streak();
  t.truthy(started, "a failure read as healthy starts the streak");

  // The store's streak is ended behind the worker's back; a read saying it runs writes nothing.
  await opened.store.subscriptions.markHealthy(subscription.id);
  await attempt(second.id, { subscription: { ...subscription, failingSince: started } });
  t.is(await streak(), undefined, "read as failing already: no write");

  // Read as healthy (as the store has it): the streak starts again.
  await attempt(third.id);
  t.truthy(await streak());
});

test("a streak long enough to disable its subscription as read is checked with the store, which decides", async (t) => {
  const { opened, subscription, accept, attempt } = await workerSetUp(t, { observe: () => {} }, failing, { autoDisableAfterMs: 60_000 });
  const [stale, old] = await accept(2);
  if (!stale || !old) return t.fail("two notifications");
  const read = () => opened.store.subscriptions.get(subscription.id);
  const longAgo = new Date(Date.now() - 120_000);

  // Read as failing for two minutes, but the store's streak (none) says otherwise: it starts now, no disabling.
  await attempt(stale.id, { subscription: { ...subscription, failingSince: longAgo } });
  const fresh = await read();
  t.true(fresh?.enabled, "the store's streak is new: still enabled");
  t.true((fresh?.failingSince?.getTime() ?? 0) > longAgo.getTime());

  // The store's streak began two minutes ago too: now it is disabled.
  await opened.store.subscriptions.markHealthy(subscription.id);
  await opened.store.subscriptions.markFailing(subscription.id, longAgo);
  await attempt(old.id, { subscription: { ...subscription, failingSince: longAgo } });
  const disabled = await read();
  t.false(disabled?.enabled);
  t.regex(disabled?.disabledReason ?? "", /every delivery failed since/);
});

test("a retry storm writes its streak once: later failures of a subscription failing already leave the store alone", async (t) => {
  const { opened, accept, attempt } = await workerSetUp(t, { observe: () => {} }, failing);
  const [notification] = await accept(1);
  if (!notification) return t.fail("one notification");
  // The store's own method, counted: each call is a write.
  const writes = countCalls(opened.store.subscriptions, "markFailing");
  for (let n = 0; n < 4; n++) await attempt(notification.id);
  t.is((await opened.store.notifications.get(notification.id))?.attemptCount, 4, "four attempts, each a failure to retry");
  t.is(writes.calls, 1, "four failures, one write: the streak's start");
});
