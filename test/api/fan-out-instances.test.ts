import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { Receiver } from "../helpers/receiver.js";
import { anotherInstance, rest, serviceOn } from "../helpers/service.js";
import { sharedTargets } from "../helpers/stores.js";

for (const target of sharedTargets(test, "fan-outs kept across instances")) {
  test(`${target.name}: an instance that keeps an event's fan-out still delivers to subscriptions another instance adds, moves and deletes`, async (t) => {
    const [first, second, moved] = await Promise.all([Receiver.start(), Receiver.start(), Receiver.start()]);
    t.teardown(() => Promise.all([first.close(), second.close(), moved.close()]));
    const a = await serviceOn(t, target);
    const b = await anotherInstance(t, a);
    const owner = await createClient(a.baseUrl, "Fan-out");
    await rest(a.baseUrl, "POST", "/api/internal/eventTypes", { name: "FanOut.Tick", description: "a test event" }, adminAuth);
    const subscribe = async (url: string) => {
      const created = await rest(a.baseUrl, "POST", "/api/webhookSubscription", { event: "FanOut.Tick", url }, owner.auth);
      t.is(created.status, 200, created.text);
      return String(created.json.id);
    };
    // Every publish goes through B, every subscription change through A.
    const publish = async (n: number, idempotencyKey?: string) => {
      const published = await rest(
        b.baseUrl,
        "POST",
        "/api/internal/events/publish",
        { clientId: owner.id, event: "FanOut.Tick", payload: { n }, ...(idempotencyKey ? { idempotencyKey } : {}) },
        adminAuth,
      );
      t.is(published.status, 200, published.text);
      return published.json.jobIds as string[];
    };
    const got = (receiver: Receiver) => receiver.requests.map((r) => (JSON.parse(r.body) as { n: number }).n).sort();

    t.deepEqual(await publish(0), [], "nobody subscribes yet");
    const firstId = await subscribe(first.url);
    t.is((await publish(1)).length, 1, "B finds the subscription A made, though it read the event's fan-out before");
    await subscribe(second.url);
    t.is((await publish(2)).length, 2, "and the one A added since B kept it");
    // Delivered before the move: an attempt reads its subscription's URL as it runs.
    await first.waitFor(2);
    const changed = await rest(a.baseUrl, "PATCH", `/api/webhookSubscription/${firstId}`, { url: moved.url }, owner.auth);
    t.is(changed.status, 200, changed.text);
    t.is((await publish(3, "key-3")).length, 2, "an idempotent publish too");
    // Delivered before the delete, which would end it as failed were it still pending.
    await moved.waitFor(1);
    const deleted = await rest(a.baseUrl, "DELETE", `/api/webhookSubscription/${firstId}`, undefined, owner.auth);
    t.true(deleted.status === 200 || deleted.status === 204, deleted.text);
    t.is((await publish(4)).length, 1, "a deleted subscription gets nothing more");

    await Promise.all([first.waitFor(2), second.waitFor(3), moved.waitFor(1)]);
    t.deepEqual(got(first), [1, 2], "before it moved");
    t.deepEqual(got(moved), [3], "at its new URL");
    t.deepEqual(got(second), [2, 3, 4]);
  });
}
