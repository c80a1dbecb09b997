import test from "ava";
import type { DeliveryActivity } from "../../src/domain/delivery-activity.js";
import { WatcherTooSlowError } from "../../src/domain/errors.js";
import { ActivityWatcher } from "../../src/live/activity-watcher.js";

const activity = (jobId: string): DeliveryActivity => ({
  kind: "accepted",
  at: new Date(),
  clientId: "cli_a",
  subscriptionId: "sub_a",
  event: "Order.Created",
  jobId,
});

test("OPEN: hands out offered activities in order, then waits for the next", async (t) => {
  const watcher = new ActivityWatcher({}, 10);
  watcher.offer(activity("1"));
  watcher.offer(activity("2"));
  t.is((await watcher.next())?.jobId, "1");
  t.is((await watcher.next())?.jobId, "2");
  const waiting = watcher.next();
  watcher.offer(activity("3"));
  t.is((await waiting)?.jobId, "3");
  t.is(watcher.mode, "open");
});

test("waitForActivity: one promise for every caller while waiting, resolved by an offer", async (t) => {
  const watcher = new ActivityWatcher({}, 10);
  const first = watcher.waitForActivity();
  t.is(watcher.waitForActivity(), first);
  watcher.offer(activity("1"));
  await first;
  t.is((await watcher.next())?.jobId, "1");
});

test("OPEN → OVERFLOWED: an offer to a full queue drops it and next() rejects with WatcherTooSlowError", async (t) => {
  const ended: ActivityWatcher[] = [];
  const watcher = new ActivityWatcher({}, 2, (w) => ended.push(w));
  watcher.offer(activity("1"));
  watcher.offer(activity("2"));
  t.is(watcher.mode, "open");
  watcher.offer(activity("3"));
  t.is(watcher.mode, "overflowed");
  t.deepEqual(ended, [watcher]);
  const error = await t.throwsAsync(watcher.next(), { instanceOf: WatcherTooSlowError });
  t.regex(error?.message ?? "", /more than 2 activities behind/);
  watcher.offer(activity("4"));
  watcher.close();
  t.is(watcher.mode, "overflowed", "final");
});

test("OVERFLOWED wakes a reader that was waiting", async (t) => {
  const watcher = new ActivityWatcher({}, 1);
  watcher.offer(activity("1"));
  t.is((await watcher.next())?.jobId, "1");
  const waiting = watcher.next();
  watcher.offer(activity("2"));
  t.is((await waiting)?.jobId, "2");
  const next = watcher.next();
  watcher.offer(activity("3"));
  t.is((await next)?.jobId, "3");
  watcher.offer(activity("4"));
  watcher.offer(activity("5"));
  await t.throwsAsync(watcher.next(), { instanceOf: WatcherTooSlowError });
});

test("OPEN → CLOSED: a waiting reader gets done, later offers are ignored, onEnd is told once", async (t) => {
  let ends = 0;
  const watcher = new ActivityWatcher({}, 10, () => ends++);
  const waiting = watcher.next();
  watcher.close();
  t.is(await waiting, undefined);
  watcher.offer(activity("1"));
  t.is(await watcher.next(), undefined);
  watcher.close();
  t.is(ends, 1);
  t.is(watcher.mode, "closed");
});
