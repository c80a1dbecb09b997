import test from "ava";
import type { DeliveryActivity } from "../../src/domain/delivery-activity.js";
import type { DeliveryEvent } from "../../src/domain/delivery-events.js";
import type { Notification } from "../../src/domain/model.js";
import { type ActivityChannel, ActivityFeed } from "../../src/live/activity-feed.js";

/** A channel standing for the other instances: records what is published, delivers what they "send". */
class FakeChannel implements ActivityChannel {
  othersWatching = false;
  published: DeliveryActivity[] = [];
  watching: boolean[] = [];
  deliver: (activities: DeliveryActivity[]) => void = () => {};
  stopped = false;
  async start(deliver: (activities: DeliveryActivity[]) => void) {
    this.deliver = deliver;
  }
  publish(activities: DeliveryActivity[]) {
    this.published.push(...activities);
  }
  async setWatching(watching: boolean) {
    this.watching.push(watching);
  }
  publishRelayResult() {
    return true;
  }
  async stop() {
    this.stopped = true;
  }
}

const notification = (clientId: string, id: string): Notification => ({
  id,
  subscriptionId: `sub_${clientId}`,
  clientId,
  event: "Order.Created",
  body: "{}",
  status: "pending",
  attemptCount: 0,
  createdAt: new Date(),
  updatedAt: new Date(),
});

const accepted = (...notifications: Notification[]): DeliveryEvent => ({ kind: "accepted", at: new Date(), notifications });

test("each watcher gets only what its filter matches: one client never sees another's", async (t) => {
  const channel = new FakeChannel();
  const feed = new ActivityFeed(channel, 10);
  await feed.start(() => {});
  const a = feed.attach({ clientId: "a" });
  const b = feed.attach({ clientId: "b" });
  const admin = feed.attach({});
  feed.observe(accepted(notification("a", "ntf_a"), notification("b", "ntf_b")));
  t.is((await a.next())?.jobId, "ntf_a");
  t.is((await b.next())?.jobId, "ntf_b");
  t.is((await admin.next())?.jobId, "ntf_a");
  t.is((await admin.next())?.jobId, "ntf_b");
  await feed.stop();
  t.is(await a.next(), undefined, "nothing more for a");
  t.is(await b.next(), undefined);
});

test("the channel is told when the first watcher comes and the last goes; others' activities reach local watchers", async (t) => {
  const channel = new FakeChannel();
  const feed = new ActivityFeed(channel, 10);
  await feed.start(() => {});
  const first = feed.attach({ clientId: "a" });
  const second = feed.attach({ clientId: "a" });
  t.deepEqual(channel.watching, [true]);
  channel.deliver([{ kind: "accepted", at: new Date(), clientId: "a", subscriptionId: "sub_a", event: "Order.Created", jobId: "remote" }]);
  t.is((await first.next())?.jobId, "remote");
  first.close();
  t.deepEqual(channel.watching, [true]);
  second.close();
  t.deepEqual(channel.watching, [true, false]);
  t.is(feed.watcherCount, 0);
});

test("publishes to the other instances only while one of them watches", async (t) => {
  const channel = new FakeChannel();
  const feed = new ActivityFeed(channel, 10);
  feed.observe(accepted(notification("a", "unwatched")));
  t.deepEqual(channel.published, []);
  channel.othersWatching = true;
  feed.observe(accepted(notification("a", "watched")));
  t.deepEqual(
    channel.published.map((each) => each.jobId),
    ["watched"],
  );
});

test("a watcher that falls behind is cut off and detached; the others keep receiving", async (t) => {
  const channel = new FakeChannel();
  const feed = new ActivityFeed(channel, 2);
  const slow = feed.attach({});
  const fast = feed.attach({});
  for (const id of ["1", "2", "3"]) {
    feed.observe(accepted(notification("a", id)));
    t.is((await fast.next())?.jobId, id);
  }
  t.is(feed.watcherCount, 1);
  await t.throwsAsync(slow.next(), { message: /fell more than 2 activities behind/ });
});
