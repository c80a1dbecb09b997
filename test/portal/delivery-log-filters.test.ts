import test from "ava";
import type { Browser } from "playwright-core";
import { buildPortal } from "../../tools/build-portal.js";
import { createClient, publishEvent } from "../helpers/admin.js";
import { axeViolations, chromiumOrSkip, launchChromium, watchForProblems } from "../helpers/browser.js";
import { postSubscription } from "../helpers/calls.js";
import { eventually } from "../helpers/eventually.js";
import { Receiver } from "../helpers/receiver.js";
import { embeddedService, rest } from "../helpers/service.js";

/** A time as a datetime-local field takes it, in this machine's time zone (the browser's too). */
const localTime = (at: Date) => new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);

/**
 * The delivery log on a subscription's page narrowed by status, by a time
 * range, and to one job found by its id, from the controls above it.
 */
if (chromiumOrSkip(test, "the portal's delivery log filters")) {
  let browser: Browser | undefined;
  test.before(() => buildPortal());
  test.after.always(() => browser?.close());

  test("the delivery log narrows by status and time range, and finds a job by its id", async (t) => {
    const running = await embeddedService(t, { AUTO_DISABLE_AFTER: "off" });
    const receiver = await Receiver.start((request) => (request.body.includes('"bad') ? { status: 503, body: "no" } : { status: 200 }));
    t.teardown(() => receiver.close());
    const client = await createClient(running.baseUrl, "Log Filters Ltd");
    const created = await postSubscription(running.baseUrl, { event: "Order.Shipped", url: receiver.url }, client.auth);
    t.is(created.status, 200, created.text);
    const subscriptionId = created.json.id as string;
    const before = new Date(Date.now() - 60_000);
    const [ok] = await publishEvent(running.baseUrl, client.id, "Order.Shipped", { OrderId: "ok-1" });
    const [bad] = await publishEvent(running.baseUrl, client.id, "Order.Shipped", { OrderId: "bad-2" });
    await receiver.waitFor(1 + 6);
    await eventually("the failure recorded", async () => {
      const log = await rest(
        running.baseUrl,
        "GET",
        `/api/webhookSubscription/${subscriptionId}/notifications?status=FAILED`,
        undefined,
        client.auth,
      );
      return ((log.json.notifications as unknown[] | undefined) ?? []).length === 1;
    });

    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: "en-US" });
    page.setDefaultTimeout(10_000);
    const problems = watchForProblems(page);
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByLabel("API key").fill(client.key);
    await page.getByRole("button", { name: "Sign in as subscriber" }).click();
    await page.getByRole("heading", { name: "Subscriptions", level: 1 }).waitFor();
    await page.goto(`${running.baseUrl}/portal/#/subscriptions/${subscriptionId}`);
    const rows = page.locator("ul.notifications > li");
    const shown = async (count: number) => {
      await eventually(`${count} notification(s) shown`, async () => (await rows.count()) === count);
      return rows.locator("span.mono").allInnerTexts();
    };
    t.deepEqual(await shown(2), [bad, ok]);

    await page.getByLabel("Status").selectOption({ label: "Failed" });
    t.deepEqual(await shown(1), [bad]);
    await page.getByLabel("Status").selectOption({ label: "All" });
    t.deepEqual(await shown(2), [bad, ok]);

    await page.getByText("Time range and job id").click();
    await page.getByLabel("Created before").fill(localTime(before));
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByText("No notifications that match yet.").waitFor();
    t.deepEqual(await shown(0), []);
    // A range that ends before it starts: the service's reason, shown.
    await page.getByLabel("Created from").fill(localTime(new Date(before.getTime() + 1000)));
    await page.getByRole("button", { name: "Apply" }).click();
    await page
      .getByRole("alert")
      .getByText(/until .* must be later than since/)
      .waitFor();
    await page.getByLabel("Created before").fill("");
    await page.getByRole("button", { name: "Apply" }).click();
    t.deepEqual(await shown(2), [bad, ok], "created from a minute ago: both");
    await page.getByRole("button", { name: "Any time" }).click();
    t.deepEqual(await shown(2), [bad, ok]);

    await page.getByLabel("Job id").fill(ok ?? "");
    await page.getByRole("button", { name: "Find" }).click();
    t.deepEqual(await shown(1), [ok]);
    t.deepEqual(await axeViolations(page), []);
    await page.getByLabel("Job id").fill("ntf_nope");
    await page.getByRole("button", { name: "Find" }).click();
    await page.getByText("No notification with job id ntf_nope on this subscription").waitFor();
    t.deepEqual(await shown(0), []);
    await page.getByRole("button", { name: "Show the log" }).click();
    t.deepEqual(await shown(2), [bad, ok]);
    t.deepEqual(problems.dialogs, []);
    t.deepEqual(problems.errors, []);
  });
}
