import test from "ava";
import { createClient, publishEvent } from "../helpers/admin.js";
import { postSubscription } from "../helpers/calls.js";
import { eventually } from "../helpers/eventually.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, serviceOn } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";

const BASE = "/api/webhookSubscription";

interface Listed {
  id: string;
  event: string;
  status: string;
  createdAt: string;
}

/**
 * A subscription's delivery log narrowed by status, event and creation
 * time, alone and together, across pages; a job looked up by its id; and
 * the filters refused with a reason when they make no sense.
 */
for (const target of storeTargets()) {
  testOn(test, target)(`${target.name}: the delivery log filters by status, event and time, and finds a job by its id`, async (t) => {
    const running = await serviceOn(t, target, { AUTO_DISABLE_AFTER: "off" });
    // Orders whose id starts with "bad" are refused for good; the rest delivered.
    const receiver = await Receiver.start((request) => (request.body.includes('"bad') ? { status: 503, body: "no" } : { status: 200 }));
    t.teardown(() => receiver.close());
    const client = await createClient(running.baseUrl, "Filters Ltd");
    const created = await postSubscription(running.baseUrl, { event: "Order.Shipped", url: receiver.url }, client.auth);
    t.is(created.status, 200, created.text);
    const log = `${BASE}/${created.json.id as string}/notifications`;

    const jobs: string[] = [];
    for (const orderId of ["ok-1", "bad-2", "ok-3", "bad-4"]) {
      jobs.push(...(await publishEvent(running.baseUrl, client.id, "Order.Shipped", { OrderId: orderId })));
    }
    await receiver.waitFor(2 + 2 * 6);
    const list = async (query: string) => {
      const answer = await rest(running.baseUrl, "GET", `${log}?${query}`, undefined, client.auth);
      t.is(answer.status, 200, `${query}: ${answer.text}`);
      return { items: (answer.json.notifications as Listed[] | undefined) ?? [], next: (answer.json.nextPageToken as string) ?? "" };
    };
    const ids = async (query: string) => (await list(query)).items.map((n) => n.id);
    const newestFirst = [...jobs].reverse();
    // Both failures recorded as failed (their sixth attempt has been answered, its record follows).
    await eventually("both failures recorded", async () => (await ids("status=NOTIFICATION_STATUS_FAILED")).length === 2);
    const all = (await list("")).items;
    t.deepEqual(
      all.map((n) => n.id),
      newestFirst,
    );

    t.deepEqual(await ids("status=NOTIFICATION_STATUS_FAILED"), [jobs[3], jobs[1]]);
    t.deepEqual(await ids("event=Order.Shipped"), newestFirst);
    t.deepEqual(await ids("event=Order.Cancelled"), [], "another event's: none");
    t.deepEqual(await ids("event=Order.Shipped&status=NOTIFICATION_STATUS_DELIVERED"), [jobs[2], jobs[0]]);

    const createdAt = (job: string | undefined) => encodeURIComponent(all.find((n) => n.id === job)?.createdAt ?? "");
    t.deepEqual(await ids(`since=${createdAt(jobs[1])}`), [jobs[3], jobs[2], jobs[1]], "since: at or after");
    t.deepEqual(await ids(`until=${createdAt(jobs[2])}`), [jobs[1], jobs[0]], "until: before");
    t.deepEqual(await ids(`since=${createdAt(jobs[1])}&until=${createdAt(jobs[3])}`), [jobs[2], jobs[1]]);
    t.deepEqual(await ids(`since=${createdAt(jobs[1])}&until=${createdAt(jobs[3])}&status=NOTIFICATION_STATUS_FAILED`), [jobs[1]]);

    // Pages of a filtered log keep to the filter.
    const paged: string[] = [];
    let token = "";
    do {
      const page = await list(`status=NOTIFICATION_STATUS_DELIVERED&since=${createdAt(jobs[0])}&pageSize=1&pageToken=${token}`);
      paged.push(...page.items.map((n) => n.id));
      token = page.next;
    } while (token);
    t.deepEqual(paged, [jobs[2], jobs[0]]);

    // A job id finds its notification.
    const one = await rest(running.baseUrl, "GET", `${log}/${jobs[1]}`, undefined, client.auth);
    t.is(one.status, 200, one.text);
    t.like(one.json, { id: jobs[1], status: "NOTIFICATION_STATUS_FAILED", event: "Order.Shipped" });

    const refused = async (query: string, field: RegExp) => {
      const answer = await rest(running.baseUrl, "GET", `${log}?${query}`, undefined, client.auth);
      t.is(answer.status, 400, `${query}: ${answer.text}`);
      t.regex(answer.text, field, query);
    };
    await refused("event=not%20an%20event", /event/);
    await refused(`since=${createdAt(jobs[3])}&until=${createdAt(jobs[1])}`, /until .* must be later than since/);
    await refused("since=yesterday", /since/);
  });
}
