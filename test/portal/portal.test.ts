import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import test from "ava";
import type { Browser, Page } from "playwright-core";
import { buildPortal } from "../../tools/build-portal.js";
import { chromiumOrSkip, launchChromium, watchForProblems } from "../helpers/browser.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, API_KEY, startTestService, type TestService } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/portal/", import.meta.url));
const XSS = "<img src=x onerror=alert(1)>";

if (chromiumOrSkip(test, "portal end-to-end tests")) {
  let running: TestService;
  let cleanupStore: (() => Promise<void>) | undefined;
  let storeEnv: Record<string, string>;
  let browser: Browser;
  let page: Page;
  let receiver: Receiver;
  let hostile: Receiver;
  /** Browser dialogs (alert, confirm), uncaught errors and CSP violations: the portal should cause none. */
  let problems: ReturnType<typeof watchForProblems>;

  // One service (embedded store), one browser, for the whole file.
  test.before(async () => {
    // Before the service starts: it reads the built portal when it builds its handler.
    await buildPortal();
    const store = await storeTargets()[0]?.create();
    if (!store) throw new Error("no store target");
    cleanupStore = store.cleanup;
    storeEnv = store.env;
    running = await startTestService(store.env);
    receiver = await Receiver.start();
    hostile = await Receiver.start(() => ({ status: 200, headers: { "content-type": "text/html" }, body: XSS }));
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    problems = watchForProblems(page);
  });
  test.after.always(async () => {
    await browser?.close();
    await running?.service.stop();
    await cleanupStore?.();
    await receiver?.close();
    await hostile?.close();
  });

  const shot = (name: string, fullPage = true) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage });

  /** Creates a subscription through the form and waits for its page. */
  async function createSubscription(url: string, description: string): Promise<void> {
    await page.goto(`${running.baseUrl}/portal/#/subscriptions`);
    await page.getByLabel("Receiver URL").fill(url);
    await page.getByLabel("Description (optional)").fill(description);
    await page.getByRole("button", { name: "Create subscription" }).click();
    await page.getByRole("heading", { name: "Live deliveries" }).waitFor();
  }

  test.serial("the page and its assets are served with their caching and a strict Content-Security-Policy", async (t) => {
    const index = await fetch(`${running.baseUrl}/portal/`);
    t.is(index.status, 200);
    t.is(index.headers.get("cache-control"), "no-cache");
    const csp = index.headers.get("content-security-policy") ?? "";
    t.regex(csp, /default-src 'self'/);
    t.notRegex(csp, /unsafe-inline/);
    const html = await index.text();
    const script = /src="(\/portal\/assets\/main-\w+\.js)"/.exec(html)?.[1];
    t.truthy(script, html);
    const asset = await fetch(`${running.baseUrl}${script}`);
    t.is(asset.status, 200);
    t.is(asset.headers.get("cache-control"), "public, max-age=31536000, immutable");
    t.regex(asset.headers.get("content-type") ?? "", /javascript/);
    t.is((await fetch(`${running.baseUrl}/portal/assets/main-NOSUCH.js`)).status, 404);
    const redirect = await fetch(`${running.baseUrl}/portal`, { redirect: "manual" });
    t.is(redirect.headers.get("location"), "/portal/");
  });

  test.serial("a wrong API key or admin token is refused on the sign-in form, and nobody is signed in", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByLabel("API key").fill("whk_not-a-key");
    await page.getByRole("button", { name: "Sign in as subscriber" }).click();
    await page.locator("#subscriber-secret-error").getByText("Not signed in: invalid API key").waitFor();
    t.is(await page.getByLabel("API key").getAttribute("aria-invalid"), "true");
    await page.getByLabel("Admin token").fill("not-the-token");
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.locator("#operator-secret-error").getByText("Not signed in: invalid admin token").waitFor();
    await page.getByText("Signed in: nobody.").waitFor();
    t.is(await page.getByRole("link", { name: "Subscriptions" }).count(), 0);
    t.is(await page.evaluate("sessionStorage.length"), 0);
  });

  test.serial("a subscriber signs in with an API key kept in session storage, and reads the event catalog", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByRole("button", { name: "Sign in as subscriber" }).click();
    await page.getByRole("heading", { name: "Subscriptions", level: 1 }).waitFor();
    t.is(await page.evaluate('sessionStorage.getItem("webhooks.apiKey")'), API_KEY);
    t.false(page.url().includes(API_KEY));
    t.deepEqual(await page.context().cookies(), []);

    await page.getByRole("link", { name: "Event catalog" }).click();
    await page.getByRole("heading", { name: "Order.Created" }).waitFor();
    await page.getByLabel("Order.Created sample payload").waitFor();
    await shot("catalog");
    t.pass();
  });

  test.serial("creating a subscription shows the server's URL message inline, then opens the new subscription", async (t) => {
    await page.goto(`${running.baseUrl}/portal/#/subscriptions`);
    await page.getByLabel("Event").selectOption("Order.Created");
    await page.getByLabel("Receiver URL").fill("ftp://example.com/hook");
    await page.getByRole("button", { name: "Create subscription" }).click();
    const message = page.locator("#create-error");
    await message.waitFor();
    // This service allows http:// (as a local one may): the message says so.
    t.is(await message.textContent(), "url must use https:// or http:// (got ftp)");
    t.is(await page.getByLabel("Receiver URL").getAttribute("aria-invalid"), "true");

    await page.getByLabel("Receiver URL").fill(receiver.url);
    await page.getByLabel("Description (optional)").fill("Orders to the warehouse");
    await page.getByRole("button", { name: "Create subscription" }).click();
    await page.getByRole("heading", { name: "Live deliveries" }).waitFor();
    t.regex(page.url(), /#\/subscriptions\/sub_/);
  });

  test.serial("send a sample, watch it arrive, see its attempt in the log, and redeliver it", async (t) => {
    await page.getByText("Watching: deliveries appear here as they happen.").waitFor();
    await page.getByRole("button", { name: "Send sample" }).click();
    const live = page.getByRole("log", { name: "Live deliveries" });
    await live
      .getByText(/^.*delivered · ntf_/)
      .first()
      .waitFor();
    t.is(receiver.requests.length, 1);

    const newest = page.locator("ul.notifications > li").first();
    await newest.locator(".badge.delivered").waitFor();
    // Found by its id: the redelivery below becomes the newest.
    const id = (await newest.locator("span.mono").textContent()) ?? "";
    const row = page.locator("ul.notifications > li").filter({ has: page.locator("span.mono", { hasText: id }) });
    await row.getByRole("button").first().click();
    const attempts = row.locator("table tbody tr");
    await attempts.first().waitFor();
    t.is(await attempts.count(), 1);
    const cells = await attempts.first().locator("td").allInnerTexts();
    t.is(cells[0], "0", "X-JobAttempt");
    t.is(cells[3], "200");
    t.is(cells[4], "ok");
    await row.getByLabel(/^Body of ntf_/).waitFor();
    await shot("subscription");

    await row.getByRole("button", { name: "Redeliver" }).click();
    await row.getByText(/Redelivery queued as ntf_/).waitFor();
    await receiver.waitFor(2);
    await page.locator("ul.notifications > li", { hasText: "redelivery of" }).locator(".badge.delivered").waitFor();
    t.is(receiver.requests[1]?.headers["x-jobattempt"], "0");
  });

  test.serial("set a rate limit in the settings, and lift it", async (t) => {
    const id = /#\/subscriptions\/(sub_[0-9a-f]+)/.exec(page.url())?.[1] ?? "";
    /** The stored limit, once it is `expected` (or what it is after 10 s). */
    const stored = async (expected: number) => {
      const until = Date.now() + 10_000;
      for (;;) {
        const answer = await fetch(`${running.baseUrl}/api/webhookSubscription/${id}`, { headers: { authorization: `Bearer ${API_KEY}` } });
        const limit = ((await answer.json()) as { rateLimitPerSecond?: number }).rateLimitPerSecond ?? 0;
        if (limit === expected || Date.now() > until) return limit;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const settings = page.getByRole("region", { name: "Settings" });
    const field = settings.getByLabel("Most deliveries per second (empty: no limit)");
    await field.fill("5");
    await settings.getByRole("button", { name: "Save" }).click();
    t.is(await stored(5), 5);
    await field.fill("");
    await settings.getByRole("button", { name: "Save" }).click();
    t.is(await stored(0), 0, "empty lifts the limit");
  });

  test.serial("set headers and a filter on the subscription's page; the headers go with a sample", async (t) => {
    const id = /#\/subscriptions\/(sub_[0-9a-f]+)/.exec(page.url())?.[1] ?? "";
    const read = async () =>
      (await (
        await fetch(`${running.baseUrl}/api/webhookSubscription/${id}`, { headers: { authorization: `Bearer ${API_KEY}` } })
      ).json()) as { headers?: Record<string, string>; filter?: unknown };
    const controls = page.getByRole("region", { name: "Headers and filter" });
    await controls.getByLabel("New headers (replace all; an empty box removes them)").fill("X-Portal: p0rtal-value\nX-Team: ops");
    await controls.getByRole("button", { name: "Save headers" }).click();
    await controls.getByText("Sent with every delivery: X-Portal, X-Team.").waitFor();
    t.deepEqual((await read()).headers, { "X-Portal": "••••", "X-Team": "••••" });
    t.false((await controls.textContent())?.includes("p0rtal-value"), "the value is not shown back");
    const before = receiver.requests.length;
    await page.getByRole("button", { name: "Send sample" }).click();
    const [sample] = (await receiver.waitFor(before + 1)).slice(before);
    t.is(sample?.headers["x-portal"], "p0rtal-value");

    await controls.getByLabel("New headers (replace all; an empty box removes them)").fill("Content-Type: text/plain");
    await controls.getByRole("button", { name: "Save headers" }).click();
    await controls.getByText(/headers\."Content-Type": the service sets this header itself/).waitFor();

    const filterField = controls.getByLabel("Payload filter (empty: every notification)");
    await filterField.fill("{Currency: EUR}");
    await controls.getByRole("button", { name: "Save filter" }).click();
    await controls.getByText(/^Filter: not JSON/).waitFor();
    await filterField.fill('{"TotalAmount": {"$foo": 1}}');
    await controls.getByRole("button", { name: "Save filter" }).click();
    await controls.getByText(/filter\.TotalAmount: unknown operator \$foo/).waitFor();
    await filterField.fill('{"Currency": {"$in": ["EUR", "CHF"]}}');
    await controls.getByRole("button", { name: "Save filter" }).click();
    await controls.getByText("Filter saved.").waitFor();
    t.deepEqual((await read()).filter, { Currency: { $in: ["EUR", "CHF"] } });
    await shot("subscription-controls");

    await filterField.fill("");
    await controls.getByRole("button", { name: "Save filter" }).click();
    await controls.getByText("Filter saved.").waitFor();
    await controls.getByLabel("New headers (replace all; an empty box removes them)").fill("");
    await controls.getByRole("button", { name: "Save headers" }).click();
    await controls.getByText("No custom headers.").waitFor();
    const cleared = await read();
    t.is(cleared.filter, undefined, "an empty box removes the filter");
    t.deepEqual(cleared.headers ?? {}, {}, "and the headers");
  });

  test.serial("rotate the signature key and confirm; disable and enable", async (t) => {
    const before = await page.getByLabel(/^Current key/).inputValue();
    t.true(before.length > 0);
    await page.getByRole("button", { name: "Rotate key" }).click();
    // Asked first, in the page: cancelling changes nothing.
    await page.getByRole("button", { name: "Cancel" }).click();
    t.is(await page.getByLabel("Next key").count(), 0);
    await page.getByRole("button", { name: "Rotate key" }).click();
    await page.getByRole("button", { name: "Yes, rotate key" }).click();
    await page.getByText(/the next key takes over at/).waitFor();
    await page.getByLabel("Next key").waitFor();
    // Each copy button on its own line, under its key.
    const copy = await page.getByRole("button", { name: "Copy key" }).boundingBox();
    const next = await page.getByText("Next key", { exact: true }).boundingBox();
    t.true(copy !== null && next !== null && next.y >= copy.y + copy.height, "Copy key and the Next key label share a line");
    await page.getByRole("button", { name: "Confirm rotation" }).click();
    await page.getByRole("button", { name: "Yes, confirm rotation" }).click();
    await page.getByRole("button", { name: "Confirm rotation" }).waitFor({ state: "detached" });
    t.not(await page.getByLabel(/^Current key/).inputValue(), before);

    await page.getByRole("button", { name: "Disable" }).click();
    await page.getByRole("button", { name: "Enable" }).waitFor();
    t.is(await page.locator("#state-title + dl dd").first().textContent(), "Disabled");
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByRole("button", { name: "Disable" }).waitFor();
    t.is(await page.locator("#state-title + dl dd").first().textContent(), "Enabled");
  });

  test.serial("a receiver's hostile response renders as text: no element, no script, no dialog", async (t) => {
    await createSubscription(hostile.url, XSS);
    await page.getByText("Watching: deliveries appear here as they happen.").waitFor();
    await page.getByRole("button", { name: "Send sample" }).click();
    const row = page.locator("ul.notifications > li").first();
    await row.locator(".badge.delivered").waitFor();
    await row.getByRole("button").first().click();
    const excerpt = row.locator("code.excerpt");
    await excerpt.waitFor();
    t.is(await excerpt.textContent(), XSS);
    await page.getByText(XSS).first().waitFor();
    t.is(await page.locator("img").count(), 0);
    t.deepEqual(problems.dialogs, []);
  });

  test.serial("an operator creates a client (key shown once) and an event type, and sees the dashboard", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    await page.getByLabel("Admin token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.getByRole("heading", { name: "Operator", level: 1 }).waitFor();

    const figures = page.locator("dl.figures");
    await figures.waitFor();
    t.true(Number(await figures.locator("div", { hasText: "Delivered" }).locator("dd").textContent()) >= 3);
    await page.locator("#dashboard-title ~ .table-scroll td.url", { hasText: receiver.url }).waitFor();

    await page.getByLabel("New client's name").fill("Warehouse");
    await page.getByRole("button", { name: "Create client" }).click();
    const once = page.locator(".once");
    await once.waitFor();
    t.regex((await once.locator("code.secret").textContent()) ?? "", /\S{16,}/);
    await page.getByRole("cell", { name: "Warehouse", exact: true }).waitFor();
    await once.getByRole("button", { name: "Revoke" }).click();
    await once.getByRole("button", { name: "Yes, revoke" }).click();
    await once.getByText("Revoked.").waitFor();

    await page.getByLabel("Name", { exact: true }).fill("Invoice.Paid");
    await page.locator("#register-description").fill("An invoice was paid.");
    await page.locator("#register-sample").fill('{"InvoiceId": "inv-1"}');
    await page.locator("#register-schema").fill("{not json");
    await page.getByRole("button", { name: "Register event type" }).click();
    await page.getByText("The JSON Schema is not valid JSON").waitFor();
    await page.locator("#register-schema").fill('{"type": "object", "required": ["InvoiceId"]}');
    await page.getByRole("button", { name: "Register event type" }).click();
    await page.getByText("Registered Invoice.Paid.").waitFor();
    await page.getByRole("button", { name: "Edit Invoice.Paid" }).click();
    await page.locator("#edit-Invoice\\.Paid-schema").fill('{"type": "object", "required": ["InvoiceId", "Amount"]}');
    await page.getByRole("button", { name: "Save Invoice.Paid" }).click();
    await page.getByText("Saved Invoice.Paid.").waitFor();
    await page.evaluate("window.scrollTo(0, 0)");
    await shot("operator", false);

    // The subscriber sees the new type, schema included.
    await page.goto(`${running.baseUrl}/portal/#/events`);
    await page.getByLabel("Invoice.Paid JSON Schema").getByText('"Amount"').waitFor();
    t.deepEqual(problems.dialogs, []);
    t.deepEqual(problems.errors, []);
  });

  test.serial("an operator lists a client's keys, revokes one, disables, enables and deletes the client, each confirmed", async (t) => {
    await page.goto(`${running.baseUrl}/portal/`);
    if (await page.getByLabel("Admin token").isVisible()) {
      await page.getByLabel("Admin token").fill(ADMIN_TOKEN);
      await page.getByRole("button", { name: "Sign in as operator" }).click();
    }
    await page.getByLabel("New client's name").fill("Offboarded Ltd");
    await page.getByRole("button", { name: "Create client" }).click();
    const key = (await page.locator(".once code.secret").textContent()) ?? "";
    const asClient = { authorization: `Bearer ${key}` };
    t.is((await fetch(`${running.baseUrl}/api/webhookSubscription`, { headers: asClient })).status, 200);

    await page.getByRole("button", { name: "Keys and state of Offboarded Ltd" }).click();
    const keys = page.getByRole("table", { name: "API keys of Offboarded Ltd" });
    const row = keys.locator("tbody tr").first();
    await row.locator("td.mono", { hasText: /^key_/ }).waitFor();
    t.is(await keys.getByText(key).count(), 0, "no secret in the list");

    const detail = page.locator(".client-detail");
    await detail.getByLabel("Reason for disabling (optional)").fill("contract ended");
    await detail.getByRole("button", { name: "Disable" }).click();
    t.is((await fetch(`${running.baseUrl}/api/webhookSubscription`, { headers: asClient })).status, 200, "not before it is confirmed");
    await detail.getByRole("button", { name: "Yes, disable" }).click();
    await page.getByRole("cell", { name: "disabled: contract ended" }).waitFor();
    await detail.getByText(/Disabled since .*: contract ended/).waitFor();
    await detail.screenshot({ path: `${ARTIFACTS}operator-client.png` });
    const refused = await fetch(`${running.baseUrl}/api/webhookSubscription`, { headers: asClient });
    t.is(refused.status, 403);
    t.regex(await refused.text(), /contract ended/);
    await detail.getByRole("button", { name: "Enable" }).click();
    await detail.getByRole("button", { name: "Yes, enable" }).click();
    await detail.getByLabel("Reason for disabling (optional)").waitFor();
    t.is((await fetch(`${running.baseUrl}/api/webhookSubscription`, { headers: asClient })).status, 200);

    await row.getByRole("button", { name: "Revoke" }).click();
    await row.getByRole("button", { name: "Yes, revoke" }).click();
    await row.getByRole("button", { name: "Revoke" }).waitFor({ state: "detached" });
    t.is((await fetch(`${running.baseUrl}/api/webhookSubscription`, { headers: asClient })).status, 401);

    await detail.getByRole("button", { name: "Delete" }).click();
    await detail.getByRole("button", { name: "Cancel" }).click();
    await detail.getByRole("button", { name: "Delete" }).click();
    await detail.getByRole("button", { name: "Yes, delete" }).click();
    await page.getByText("Client Offboarded Ltd deleted; its data is purged in the background.").waitFor();
    await page.getByRole("cell", { name: "Offboarded Ltd", exact: true }).waitFor({ state: "detached" });
    t.deepEqual(problems.dialogs, []);
    t.deepEqual(problems.errors, []);
  });

  test.serial("narrow screen, dark mode: the subscriptions page still reads", async (t) => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${running.baseUrl}/portal/#/subscriptions`);
    await page.getByRole("link", { name: "Order.Created" }).first().waitFor();
    const overflow = Number(await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"));
    t.true(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
    await shot("subscriptions-narrow-dark");
    // A subscription with its delivery log open: job ids wrap, and the status filter keeps its label apart.
    await page
      .locator("tr", { has: page.locator("td.url", { hasText: receiver.url }) })
      .getByRole("link")
      .click();
    await page.locator("ul.notifications > li").first().getByRole("button").first().click();
    await page.locator("ul.notifications table").first().waitFor();
    const wide = Number(await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"));
    t.true(wide <= 0, `the subscription page scrolls sideways by ${wide}px`);
    const label = await page.locator("label[for=log-status]").boundingBox();
    const select = await page.getByLabel("Status", { exact: true }).boundingBox();
    t.true(label !== null && select !== null && select.x >= label.x + label.width + 4, "Status is jammed against its select");
    await shot("subscription-narrow-dark");
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.emulateMedia({ colorScheme: "light" });
    await page.goto(`${running.baseUrl}/portal/#/subscriptions`);
    await page.getByRole("link", { name: "Order.Created" }).first().waitFor();
    await shot("subscriptions");
  });

  test.serial("the live view waits out a restart of the service and goes on watching", async (t) => {
    await page.goto(`${running.baseUrl}/portal/#/subscriptions`);
    await page
      .locator("tr", { has: page.locator("td.url", { hasText: receiver.url }) })
      .getByRole("link")
      .click();
    const status = page.locator("#live-title ~ p.hint");
    await status.getByText("Watching: deliveries appear here as they happen.").waitFor();

    const port = running.service.port;
    await running.service.stop();
    await status.getByText("The service is not answering: reconnecting…").waitFor();
    running = await startTestService({ ...storeEnv, PORT: String(port) });
    await status.getByText("Watching: deliveries appear here as they happen.").waitFor();
    await page.getByRole("button", { name: "Send sample" }).click();
    const sent = (await page.getByText(/^Sample sent as ntf_/).textContent()) ?? "";
    const jobId = /ntf_\w+/.exec(sent)?.[0] ?? "";
    const live = page.getByRole("log", { name: "Live deliveries" });
    await live.getByText(`delivered · ${jobId}`).waitFor();
    t.is(await live.locator("ol").count(), 0, "the live deliveries are not numbered");
  });
}
