import test from "ava";
import type { Browser, Page } from "playwright-core";
import { buildPortal } from "../../tools/build-portal.js";
import { createClient, publishEvent } from "../helpers/admin.js";
import { chromiumOrSkip, launchChromium, watchForProblems } from "../helpers/browser.js";
import {
  closeReceiverMix,
  columnSums,
  mixAnswered,
  mixFigures,
  type ReceiverMix,
  startReceiverMix,
  statsCountEnded,
  subscribeMix,
  totals,
} from "../helpers/dashboard.js";
import { ADMIN_TOKEN, anotherInstance, serviceOn } from "../helpers/service.js";
import { postgresOnly } from "../helpers/stores.js";

/** Events published through each of the two instances. */
const EACH = 3;
const TITLE = "the operator's dashboard counts what two instances on one database published, and still does after a restart";

/**
 * The operator's figures come from the store: a known mix (successes,
 * failures for good, retries) published half through one instance and half
 * through another on the same PostgreSQL database, read from the charts'
 * tables on one instance's portal; then, with both stopped and one started
 * again on that database, read again.
 */
const postgres = chromiumOrSkip(test, "the portal's dashboard across instances") ? postgresOnly(test, TITLE) : undefined;
if (postgres) {
  let browser: Browser | undefined;
  let mix: ReceiverMix | undefined;
  test.before(() => buildPortal());
  test.after.always(async () => {
    await browser?.close();
    await closeReceiverMix(mix);
  });

  async function signInAsOperator(page: Page, baseUrl: string): Promise<void> {
    await page.goto(`${baseUrl}/portal/`);
    await page.getByLabel("Admin token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
  }

  test(TITLE, async (t) => {
    mix = await startReceiverMix();
    const first = await serviceOn(t, postgres);
    const second = await anotherInstance(t, first);
    const client = await createClient(first.baseUrl, "Two Instances Ltd");
    await subscribeMix(first.baseUrl, client.auth, mix, "Order.Shipped");
    for (let i = 0; i < EACH; i++) {
      for (const [name, instance] of [
        ["a", first],
        ["b", second],
      ] as const) {
        const jobs = await publishEvent(instance.baseUrl, client.id, "Order.Shipped", { OrderId: `ord_${name}${i}` });
        t.is(jobs.length, 3, "one job for each receiver of the mix");
      }
    }
    await mixAnswered(mix, EACH * 2);
    const expected = mixFigures(EACH * 2);
    await statsCountEnded(first.baseUrl, client.id, expected.accepted);
    const expectedTotals = {
      Accepted: expected.accepted,
      Delivered: expected.delivered,
      "Failed for good": expected.failed,
      "Failed attempts": expected.failedAttempts,
      "Pending now": 0,
    };
    const expectedSums = {
      Accepted: expected.accepted,
      Delivered: expected.delivered,
      "Failed for good": expected.failed,
      "Failed attempts": expected.failedAttempts,
    };

    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: "en-US" });
    page.setDefaultTimeout(10_000);
    const problems = watchForProblems(page);
    const section = page.getByRole("region", { name: "Deliveries", exact: true });
    const chart = section.getByRole("figure", { name: "Notifications per minute" }).locator("canvas");

    // Read on the second instance's portal: it published only half, and delivered some share of the rest.
    await signInAsOperator(page, second.baseUrl);
    await chart.waitFor();
    t.deepEqual(await totals(section), expectedTotals, "the totals before the restart");
    t.deepEqual(await columnSums(page, "Notifications per minute"), expectedSums, "the chart's table before the restart");

    await Promise.all([first.service.stop(), second.service.stop()]);
    const again = await anotherInstance(t, first);
    await signInAsOperator(page, again.baseUrl);
    await chart.waitFor();
    t.deepEqual(await totals(section), expectedTotals, "the totals after the restart");
    t.deepEqual(await columnSums(page, "Notifications per minute"), expectedSums, "the chart's table after the restart");
    // Nothing was delivered twice on the way: each receiver had only the attempts counted above.
    t.deepEqual([mix.healthy.requests.length, mix.flaky.requests.length, mix.failing.requests.length], [EACH * 2, EACH * 4, EACH * 12]);
    t.deepEqual(problems.dialogs, []);
    t.deepEqual(problems.errors, []);
  });
}
