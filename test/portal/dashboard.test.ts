import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import test, { type ExecutionContext } from "ava";
import type { Browser, Locator, Page } from "playwright-core";
import { buildPortal } from "../../tools/build-portal.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { axeViolations, chromiumOrSkip, focusedControl, launchChromium, tabTo, watchForProblems } from "../helpers/browser.js";
import {
  closeReceiverMix,
  columnSums,
  mixAnswered,
  mixFigures,
  type ReceiverMix,
  startReceiverMix,
  statsCountEnded,
  subscribe,
  subscribeMix,
  totals,
} from "../helpers/dashboard.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, rest, startTestService, type TestService } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/portal/", import.meta.url));
const EVENTS = 4;
/** How long the slow receiver takes to answer 200: far above what a loaded machine adds to the others' answers. */
const SLOW_MS = 1000;

/**
 * The delivery figures in the portal: a known mix of deliveries (to a
 * receiver that answers 200, one that always answers 503, and one that fails
 * each notification's first attempt only), and one that answers 200 after
 * SLOW_MS, published to one client, read back from the charts' tables on
 * the operator's page and the client's own.
 */
if (chromiumOrSkip(test, "the portal's dashboard tests")) {
  let running: TestService;
  let cleanupStore: (() => Promise<void>) | undefined;
  let browser: Browser;
  let page: Page;
  let problems: ReturnType<typeof watchForProblems>;
  let healthy: Receiver;
  let failing: Receiver;
  let flaky: Receiver;
  let slow: Receiver;
  let mix: ReceiverMix | undefined;
  let client: Awaited<ReturnType<typeof createClient>>;
  /** What the published mix must add up to. */
  let expected: { accepted: number; delivered: number; failed: number; failedAttempts: number };

  test.before(async () => {
    await buildPortal();
    // The last store: PostgreSQL's SQL when POSTGRES_URL is set, else PGlite's.
    const store = await storeTargets().at(-1)?.create();
    if (!store) throw new Error("no store target");
    cleanupStore = store.cleanup;
    running = await startTestService(store.env);
    mix = await startReceiverMix();
    ({ healthy, failing, flaky } = mix);
    client = await createClient(running.baseUrl, "Dashboard Ltd");
    await subscribeMix(running.baseUrl, client.auth, mix, "Order.Shipped");
    slow = await Receiver.start(() => ({ status: 200, delayMs: SLOW_MS }));
    await subscribe(running.baseUrl, client.auth, "Order.Shipped", slow.url);
    for (let i = 0; i < EVENTS; i++) {
      const published = await rest(
        running.baseUrl,
        "POST",
        "/api/internal/events/publish",
        { clientId: client.id, event: "Order.Shipped", payload: { OrderId: `ord_${i}` } },
        adminAuth,
      );
      if (published.status !== 200) throw new Error(`publish: ${published.text}`);
    }
    await mixAnswered(mix, EVENTS);
    await slow.waitFor(EVENTS);
    // The slow receiver delivers each notification at its first attempt.
    const figures = mixFigures(EVENTS);
    expected = { ...figures, accepted: figures.accepted + EVENTS, delivered: figures.delivered + EVENTS };
    await statsCountEnded(running.baseUrl, client.id, expected.accepted);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: "en-US" });
    page.setDefaultTimeout(10_000);
    problems = watchForProblems(page);
  });
  test.after.always(async () => {
    await browser?.close();
    await running?.service.stop();
    await cleanupStore?.();
    await closeReceiverMix(mix);
    await slow?.close();
  });

  /** The endpoint table's origins, top to bottom. */
  const origins = (section: Locator) => section.locator("table.endpoint-health td.url").allInnerTexts();
  /** How the column whose header button is `name` sorts the table (its header's aria-sort). */
  const sortOf = (page: Page, section: Locator, name: string) =>
    section.locator("th", { has: page.getByRole("button", { name, exact: true }) }).getAttribute("aria-sort");

  const expectedTotals = () => ({
    Accepted: expected.accepted,
    Delivered: expected.delivered,
    "Failed for good": expected.failed,
    "Failed attempts": expected.failedAttempts,
    "Pending now": 0,
  });

  const originOf = (receiver: Receiver) => new URL(receiver.url).origin;

  async function audit(t: ExecutionContext, name: string): Promise<void> {
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      const violations = await axeViolations(page);
      t.deepEqual(violations, [], `${name}, ${colorScheme} mode:\n${violations.join("\n")}`);
    }
    await page.emulateMedia({ colorScheme: "light" });
  }

  test.serial("the operator's charts count what was published, over each range", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByLabel("Admin token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    const section = page.getByRole("region", { name: "Deliveries", exact: true });
    await section.getByRole("figure", { name: "Notifications per minute" }).locator("canvas").waitFor();
    await mkdir(ARTIFACTS, { recursive: true });
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      await section.screenshot({ path: `${ARTIFACTS}dashboard-${colorScheme}.png` });
    }
    await page.emulateMedia({ colorScheme: "light" });
    // Only this client has deliveries: every client's figures are its figures.
    t.deepEqual(await totals(section), expectedTotals());
    t.deepEqual(await columnSums(page, "Notifications per minute"), {
      Accepted: expected.accepted,
      Delivered: expected.delivered,
      "Failed for good": expected.failed,
      "Failed attempts": expected.failedAttempts,
    });
    const latency = await columnSums(page, "Attempt latency per minute");
    t.deepEqual(Object.keys(latency), ["p50 (ms)", "p95 (ms)", "p99 (ms)"]);

    await page.getByLabel("Period").selectOption({ label: "Last 7 days" });
    await section.getByRole("figure", { name: "Notifications per hour" }).locator("canvas").waitFor();
    t.is(await page.getByRole("table", { name: "Notifications per minute" }).count(), 0);
    t.deepEqual((await columnSums(page, "Notifications per hour")).Accepted, expected.accepted);
    t.deepEqual(await totals(section), expectedTotals());
    await page.getByLabel("Period").selectOption({ label: "Last hour" });
    await section.getByRole("figure", { name: "Notifications per minute" }).locator("canvas").waitFor();
  });

  test.serial("the endpoint table ranks the failing endpoint first, and sorts by each column from the keyboard", async (t) => {
    // Through the API: the slow endpoint's p95 is the highest.
    const stats = await rest(running.baseUrl, "GET", `/api/internal/stats?range=1h&clientId=${client.id}`, undefined, adminAuth);
    const health = (stats.json.stats as { endpoints: Array<{ origin: string; latencyP95Ms?: number }> }).endpoints;
    const slowest = health.reduce((worst, endpoint) => ((endpoint.latencyP95Ms ?? 0) > (worst.latencyP95Ms ?? 0) ? endpoint : worst));
    t.is(slowest.origin, originOf(slow));
    t.true((slowest.latencyP95Ms ?? 0) >= SLOW_MS);

    const section = page.getByRole("region", { name: "Deliveries", exact: true });
    // Worst first: the lowest success rate, then (among those always delivering) the highest p95.
    t.deepEqual(await origins(section), [originOf(failing), originOf(flaky), originOf(slow), originOf(healthy)]);
    const rates = await section.locator("table.endpoint-health td[data-label='Success rate']").allInnerTexts();
    t.deepEqual(rates, ["0.0 %", "50.0 %", "100.0 %", "100.0 %"]);
    const sparklines: Array<string | null> = await section
      .locator(".sparkline")
      .evaluateAll((spans) => spans.map((span) => span.getAttribute("aria-label")));
    // The failing endpoint's sparkline: its failed attempts per minute, oldest first, in its text.
    const [label, figures] = (sparklines[0] ?? "").split(", oldest first: ");
    t.is(label, `${originOf(failing)}, failed attempts per minute`);
    t.is(
      (figures ?? "").split(", ").reduce((sum, figure) => sum + Number(figure), 0),
      EVENTS * 6,
    );

    const successRate = section.getByRole("button", { name: "Success rate", exact: true });
    await successRate.focus();
    t.is((await focusedControl(page)).name, "Success rate");
    await page.keyboard.press("Enter");
    t.is(await sortOf(page, section, "Success rate"), "ascending");
    t.deepEqual(await origins(section), [originOf(failing), originOf(flaky), originOf(slow), originOf(healthy)]);
    await page.keyboard.press("Enter");
    t.is(await sortOf(page, section, "Success rate"), "descending");
    t.deepEqual((await origins(section)).slice(-2), [originOf(flaky), originOf(failing)]);
    // p95 latency, slowest first: the slow endpoint.
    await page.keyboard.press("Tab");
    t.is((await focusedControl(page)).name, "p95 latency");
    await page.keyboard.press("Enter");
    t.is((await origins(section))[0], originOf(slow));
    t.is(await sortOf(page, section, "p95 latency"), "descending");
    // Attempts, most first: the failing endpoint made six for each notification.
    await page.keyboard.press("Tab");
    t.is((await focusedControl(page)).name, "Attempts");
    await page.keyboard.press("Enter");
    t.is((await origins(section))[0], originOf(failing));
    t.is(await sortOf(page, section, "Success rate"), "none");

    // A client's button narrows the figures to that client.
    await section
      .getByRole("button", { name: `Show only ${client.id}` })
      .first()
      .click();
    await section.getByText(`Client ${client.id} only.`).waitFor();
    t.deepEqual(await totals(section), expectedTotals());
    await audit(t, "the operator's dashboard");
    await section.getByRole("button", { name: "Show every client" }).click();
    await section.getByText(`Client ${client.id} only.`).waitFor({ state: "detached" });
  });

  test.serial("the subscriber sees its own figures and endpoints on its subscriptions page", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByLabel("API key").fill(client.key);
    await page.getByRole("button", { name: "Sign in as subscriber" }).click();
    const section = page.getByRole("region", { name: "Your deliveries" });
    await section.getByRole("figure", { name: "Notifications per minute" }).locator("canvas").waitFor();
    await tabTo(page, "Period");
    t.deepEqual(await totals(section), expectedTotals());
    t.deepEqual((await columnSums(page, "Notifications per minute")).Delivered, expected.delivered);
    t.deepEqual(await origins(section), [originOf(failing), originOf(flaky), originOf(slow), originOf(healthy)]);
    t.is(await section.getByRole("button", { name: /^Show only/ }).count(), 0, "no client column for a client");
    await audit(t, "the subscriber's figures");
    t.deepEqual(problems.dialogs, []);
    t.deepEqual(problems.errors, []);
  });
}
