import test from "ava";
import { createClient, publishEvent, registerEventType } from "../helpers/admin.js";
import { postSample, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { embeddedService, rest, serviceOn } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";

const EVENT = "Filter.Order";
const COUNT = 1000;
const BATCH = 50;
const FILTER = { Currency: { $in: ["EUR", "CHF"] }, TotalAmount: { $gte: 100 } };
const CURRENCIES = ["EUR", "CHF", "USD", "GBP"];

async function setUp(base: string) {
  const owner = await createClient(base, "Filtered");
  // The sample matches no filter below: samples are sent whatever the filter says.
  await registerEventType(base, EVENT, { samplePayload: { OrderId: "sample", Currency: "JPY", TotalAmount: 1 } });
  return owner;
}

/** The n-th order of the batch: every currency with amounts on both sides of 100, and some without an amount. */
function order(n: number): Record<string, unknown> {
  return {
    OrderId: `ord_${n}`,
    Currency: CURRENCIES[n % CURRENCIES.length],
    ...(n % 7 === 0 ? {} : { TotalAmount: (n * 37) % 250 }),
  };
}

/** What FILTER means, written out by hand. */
function wanted(payload: Record<string, unknown>): boolean {
  return (
    (payload.Currency === "EUR" || payload.Currency === "CHF") && typeof payload.TotalAmount === "number" && payload.TotalAmount >= 100
  );
}

function publish(base: string, clientId: string, payload: Record<string, unknown>): Promise<string[]> {
  return publishEvent(base, clientId, EVENT, payload);
}

/** Every notification in a subscription's delivery log. */
async function logOf(base: string, auth: Record<string, string>, id: string): Promise<Array<{ jobId?: string; id?: string }>> {
  const all: Array<{ jobId?: string; id?: string }> = [];
  let pageToken = "";
  do {
    const page = await rest(
      base,
      "GET",
      `/api/webhookSubscription/${id}/notifications?pageSize=500&pageToken=${pageToken}`,
      undefined,
      auth,
    );
    if (page.status !== 200) throw new Error(page.text);
    all.push(...((page.json.notifications as typeof all | undefined) ?? []));
    pageToken = String(page.json.nextPageToken ?? "");
  } while (pageToken);
  return all;
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: a filter delivers exactly the matching notifications of ${COUNT} published concurrently; no others are made`,
    async (t) => {
      const receiver = await Receiver.start();
      t.teardown(() => receiver.close());
      const { baseUrl: base } = await serviceOn(t, target);
      const owner = await setUp(base);
      const created = await postSubscription(base, { event: EVENT, url: receiver.url, filter: FILTER }, owner.auth);
      t.is(created.status, 200, created.text);
      t.deepEqual(created.json.filter, FILTER, "the subscription shows its filter");
      const read = await rest(base, "GET", `/api/webhookSubscription/${created.json.id}`, undefined, owner.auth);
      t.deepEqual(read.json.filter, FILTER);

      const orders = Array.from({ length: COUNT }, (_, n) => order(n));
      const expected = new Set(orders.filter(wanted).map((payload) => String(payload.OrderId)));
      t.true(expected.size > 100 && expected.size < COUNT / 2, `a mixed batch: ${expected.size} of ${COUNT} match`);
      let jobs = 0;
      for (let start = 0; start < COUNT; start += BATCH) {
        const answers = await Promise.all(orders.slice(start, start + BATCH).map((payload) => publish(base, owner.id, payload)));
        answers.forEach((jobIds, i) => {
          const payload = orders[start + i] as Record<string, unknown>;
          if (jobIds.length !== (wanted(payload) ? 1 : 0)) t.fail(`${String(payload.OrderId)}: ${jobIds.length} jobs`);
          jobs += jobIds.length;
        });
      }
      t.is(jobs, expected.size, "a job for each matching notification only");
      t.is((await logOf(base, owner.auth, String(created.json.id))).length, expected.size, "the delivery log holds the matching ones only");

      // A retry (a busy machine's timeout) repeats a job: count jobs, not requests.
      const jobsOf = () => {
        const byOrder = new Map<string, Set<string>>();
        for (const request of receiver.requests) {
          const orderId = String((JSON.parse(request.body) as { OrderId: string }).OrderId);
          byOrder.set(orderId, (byOrder.get(orderId) ?? new Set()).add(String(request.headers["x-jobid"])));
        }
        return byOrder;
      };
      const deadline = Date.now() + 120_000;
      while (jobsOf().size < expected.size && Date.now() < deadline) await receiver.waitFor(receiver.requests.length + 1, 120_000);
      const received = jobsOf();
      t.deepEqual([...received.keys()].sort(), [...expected].sort(), "exactly the matching ones");
      t.true(
        [...received.values()].every((jobIds) => jobIds.size === 1),
        "each in one job",
      );

      // The sample goes out whatever the filter says.
      const sample = await postSample(base, { event: EVENT, url: receiver.url }, owner.auth);
      t.is(sample.status, 200, sample.text);
      const sent = await receiver.waitForJob(String(sample.json.jobId));
      t.is((JSON.parse(sent.body) as { OrderId: string }).OrderId, "sample");

      // An update with {} removes the filter: everything is delivered again.
      const cleared = await rest(base, "PATCH", `/api/webhookSubscription/${created.json.id}`, { filter: {} }, owner.auth);
      t.is(cleared.status, 200, cleared.text);
      t.is(cleared.json.filter, undefined, "no filter shown");
      t.is((await publish(base, owner.id, { OrderId: "after", Currency: "USD" })).length, 1);
    },
  );
}

test("a bad filter is refused with 400 saying where; an update replaces the filter or leaves it", async (t) => {
  const { baseUrl: base } = await embeddedService(t);
  const owner = await setUp(base);
  const cases: Array<[unknown, RegExp]> = [
    [{ TotalAmount: { $foo: 1 } }, /^filter\.TotalAmount: unknown operator \$foo$/],
    [{ $or: [{ Currency: "EUR" }, { Currency: { $regex: "^C" } }] }, /^filter\.\$or\[1\]\.Currency: unknown operator \$regex$/],
    [{ Currency: { $in: "EUR" } }, /^filter\.Currency\.\$in: a list of values$/],
    [{ Currency: { $in: Array.from({ length: 800 }, (_, i) => `C${i}`) } }, /^filter: at most 4096 bytes of JSON/],
    [{ A: { B: { C: { D: { E: { F: { G: { H: { I: 1 } } } } } } } } }, /^filter: nested more than 8 deep$/],
  ];
  for (const [filter, message] of cases) {
    const refused = await postSubscription(base, { event: EVENT, url: "https://example.com/hook", filter }, owner.auth);
    t.is(refused.status, 400, refused.text);
    t.is(refused.json.code, "invalid_argument");
    t.regex(String(refused.json.message), message);
  }
  const notObject = await postSubscription(base, { event: EVENT, url: "https://example.com/hook", filter: [1] }, owner.auth);
  t.is(notObject.status, 400, notObject.text);
  t.is(notObject.json.code, "invalid_argument", "a filter that is no object is refused");

  const created = await postSubscription(base, { event: EVENT, url: "https://example.com/hook" }, owner.auth);
  t.is(created.json.filter, undefined, "none given, none shown");
  const path = `/api/webhookSubscription/${created.json.id}`;
  const set = await rest(base, "PATCH", path, { filter: { Currency: "EUR" } }, owner.auth);
  t.deepEqual(set.json.filter, { Currency: "EUR" });
  const other = await rest(base, "PATCH", path, { description: "kept" }, owner.auth);
  t.deepEqual(other.json.filter, { Currency: "EUR" }, "an update without a filter leaves it");
  const bad = await rest(base, "PATCH", path, { filter: { TotalAmount: { $foo: 1 } } }, owner.auth);
  t.is(bad.status, 400, bad.text);
  t.regex(String(bad.json.message), /^filter\.TotalAmount: unknown operator \$foo$/);
  t.deepEqual((await rest(base, "GET", path, undefined, owner.auth)).json.filter, { Currency: "EUR" }, "a refused update changes nothing");
});
