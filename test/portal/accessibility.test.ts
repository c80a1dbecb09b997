import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import test, { type ExecutionContext } from "ava";
import type { Browser, Page } from "playwright-core";
import { buildPortal } from "../../tools/build-portal.js";
import { axeViolations, chromiumOrSkip, focusedControl, launchChromium, tabTo, watchForProblems } from "../helpers/browser.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, API_KEY, rest, startTestService, type TestService } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/portal/", import.meta.url));
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844 };

/**
 * Every portal page, in light and dark mode (and dark on a phone-sized
 * screen), audited by axe-core in Chromium under the portal's own
 * Content-Security-Policy; and the sign-in and a main flow done from the
 * keyboard alone. One service and one browser for the whole file.
 */
if (chromiumOrSkip(test, "the portal's accessibility tests")) {
  let running: TestService;
  let cleanupStore: (() => Promise<void>) | undefined;
  let browser: Browser;
  let page: Page;
  let problems: { dialogs: string[]; errors: string[] };
  let healthy: Receiver;
  let failing: Receiver;
  /** The subscription whose deliveries fail, and the one whose deliveries succeed. */
  let failingId: string;

  test.before(async () => {
    // Built before the service starts: it reads the built portal as it builds its handler.
    await buildPortal();
    const store = await storeTargets()[0]?.create();
    if (!store) throw new Error("no store target");
    cleanupStore = store.cleanup;
    running = await startTestService(store.env);
    healthy = await Receiver.start();
    failing = await Receiver.start(() => ({ status: 503, body: "busy" }));
    // A subscription whose notification failed for good: its page shows a failed notification's attempts.
    const created = await rest(running.baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Created", url: failing.url });
    if (created.status !== 200) throw new Error(`create subscription: ${created.text}`);
    failingId = created.json.id as string;
    await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Order.Created",
      url: failing.url,
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: WIDE });
    page.setDefaultTimeout(10_000);
    problems = watchForProblems(page);
  });
  test.after.always(async () => {
    await browser?.close();
    await healthy?.close();
    await failing?.close();
    await running?.service.stop();
    await cleanupStore?.();
  });

  /**
   * Audits the page as it is now in light and dark mode, and on a phone-sized
   * screen (where tables become blocks and long lists scroll); fails listing
   * every serious or critical violation.
   */
  async function audit(t: ExecutionContext, name: string): Promise<void> {
    const views = [
      { colorScheme: "light", viewport: WIDE },
      { colorScheme: "dark", viewport: WIDE },
      { colorScheme: "dark", viewport: NARROW },
    ] as const;
    for (const { colorScheme, viewport } of views) {
      await page.emulateMedia({ colorScheme });
      await page.setViewportSize(viewport);
      const violations = await axeViolations(page);
      t.deepEqual(violations, [], `${name}, ${colorScheme} mode, ${viewport.width} px wide:\n${violations.join("\n")}`);
    }
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize(WIDE);
  }

  test.serial("the sign-in page, signed out and with a refused key", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
    // The audit runs under the page's CSP and sees what it should: a button without a name is critical.
    await page.evaluate(`document.querySelector("main").append(Object.assign(document.createElement("button"), { id: "nameless" }))`);
    t.regex((await axeViolations(page)).join("\n"), /^button-name \(critical\).*#nameless/m);
    await page.evaluate(`document.getElementById("nameless").remove()`);
    await audit(t, "sign-in");
    await page.getByLabel("API key").fill("whk_not-a-key");
    await page.getByRole("button", { name: "Sign in as subscriber" }).click();
    await page.locator("#subscriber-secret-error").waitFor();
    await audit(t, "sign-in with an error");
  });

  test.serial("sign in from the keyboard: skip link first, then the forms in reading order", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
    t.deepEqual(await tabTo(page, "Sign in as operator"), [
      "Skip to content",
      "Sign in",
      "API key",
      "Sign in as subscriber",
      "Admin token",
      "Sign in as operator",
    ]);
    // Back to the top: the skip link moves the focus past the navigation, to the first field.
    await page.goto(`${running.baseUrl}/portal/`);
    await tabTo(page, "Skip to content", 1);
    await page.keyboard.press("Enter");
    t.deepEqual(await tabTo(page, "API key", 1), ["API key"]);
    await page.keyboard.type(API_KEY);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Subscriptions", level: 1 }).waitFor();
    t.is(await page.evaluate('sessionStorage.getItem("webhooks.apiKey")'), API_KEY);
    t.is(await page.title(), "Subscriptions · Webhooks portal");
  });

  test.serial("create a subscription, send a sample and open its delivery from the keyboard", async (t) => {
    // The new page has the focus: the next Tab goes into it, not back to the skip link.
    t.is(await page.evaluate("document.activeElement.id"), "main");
    t.not((await tabTo(page, "Receiver URL"))[0], "Skip to content");
    await page.keyboard.type(healthy.url);
    await page.keyboard.press("Tab");
    t.is((await focusedControl(page)).name, "Description (optional)");
    await page.keyboard.type("Made from the keyboard");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Live deliveries" }).waitFor();
    await page.getByText("Watching: deliveries appear here as they happen.").waitFor();
    t.regex(await page.title(), /^Subscription sub_\w+ · Webhooks portal$/);

    await tabTo(page, "Send sample");
    await page.keyboard.press("Enter");
    await healthy.waitFor(1);
    const row = page.locator("ul.notifications > li").first();
    await row.locator(".badge.delivered").waitFor();
    const id = (await row.locator("span.mono").textContent()) ?? "";
    await tabTo(page, (await row.getByRole("button").first().textContent())?.trim() ?? id);
    await page.keyboard.press("Enter");
    const attempts = row.locator("table tbody tr");
    await attempts.first().waitFor();
    t.is(await attempts.count(), 1);
  });

  test.serial("the subscriber's pages: subscriptions, event catalog, a subscription with its log open", async (t) => {
    await page.goto(`${running.baseUrl}/portal/#/subscriptions`);
    await page.getByRole("link", { name: "Order.Created" }).first().waitFor();
    await audit(t, "subscriptions");

    await page.getByLabel("Receiver URL").fill("ftp://example.com/hook");
    await page.getByRole("button", { name: "Create subscription" }).click();
    await page.locator("#create-error").waitFor();
    await audit(t, "subscriptions with a refused URL");

    await page.goto(`${running.baseUrl}/portal/#/events`);
    await page.getByLabel("Order.Created sample payload").waitFor();
    await audit(t, "event catalog");

    await failing.waitFor(6);
    await page.goto(`${running.baseUrl}/portal/#/subscriptions/${failingId}`);
    const row = page.locator("ul.notifications > li").first();
    await row.locator(".badge.failed").waitFor();
    await row.getByRole("button").first().click();
    await row.locator("table tbody tr").nth(5).waitFor();
    // A rotation under way (two keys shown), and a deletion being asked.
    await page.getByRole("button", { name: "Rotate key" }).click();
    await page.getByRole("button", { name: "Yes, rotate key" }).click();
    await page.getByLabel("Next key").waitFor();
    await page.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("button", { name: "Yes, delete" }).waitFor();
    await audit(t, "a subscription");
  });

  test.serial("the operator's page, with a new API key shown once and an event type being edited", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByLabel("Admin token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.getByRole("heading", { name: "Operator", level: 1 }).waitFor();
    await page.locator("dl.figures").waitFor();
    t.is(await page.evaluate("window.scrollY"), 0, "the new page is shown from its top");
    await mkdir(ARTIFACTS, { recursive: true });
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      await page.screenshot({ path: `${ARTIFACTS}operator-${colorScheme}.png` });
    }
    await page.getByLabel("New client's name").fill("Audited");
    await page.getByRole("button", { name: "Create client" }).click();
    await page.locator(".once").waitFor();
    await page.getByRole("button", { name: "Edit Order.Created" }).click();
    await page.getByRole("button", { name: "Save Order.Created" }).waitFor();
    await audit(t, "operator");
  });

  test.serial("the sign-in page while signed in, and no dialog or error on the way", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByText("Signed in: subscriber, operator.").waitFor();
    await audit(t, "sign-in, signed in");
    t.deepEqual(problems.dialogs, []);
    t.deepEqual(problems.errors, []);
  });
}
