import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import test from "ava";
import type { Browser, Page } from "playwright-core";
import { COUNTS, ENDPOINTS, LATENCY, TIMES } from "../../portal/test-pages/chart-figures.js";
import { createPortalEndpoint } from "../../src/api/transport/portal-endpoint.js";
import { buildPortal } from "../../tools/build-portal.js";
import { axeViolations, chromiumOrSkip, launchChromium, tabTo, watchForProblems } from "../helpers/browser.js";

/**
 * The portal's charts (portal/src/charts) on a test page of known figures
 * (portal/test-pages/charts.tsx), bundled as the portal is and served by the
 * portal's own endpoint, under its Content-Security-Policy.
 */
const PAGE = fileURLToPath(new URL("../../portal/test-pages/charts.tsx", import.meta.url));

if (chromiumOrSkip(test, "the portal's chart tests")) {
  let dir: string;
  let server: Server;
  let url: string;
  let browser: Browser;
  let page: Page;
  let problems: ReturnType<typeof watchForProblems>;

  test.before(async () => {
    dir = await mkdtemp(join(tmpdir(), "wh-charts-"));
    await buildPortal(join(dir, "portal"), PAGE);
    const portal = createPortalEndpoint(join(dir, "portal"));
    server = createServer((req, res) => {
      if (!portal(new URL(req.url ?? "/", "http://localhost").pathname, req, res)) res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/portal/`;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: "en-US" });
    page.setDefaultTimeout(10_000);
    problems = watchForProblems(page);
  });
  test.after.always(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** How many pixels of each canvas are exactly `color` (`#rrggbb`). */
  const pixelsOf = async (color: string): Promise<number[]> =>
    (await page.evaluate(`[...document.querySelectorAll("canvas")].map((canvas) => {
      const [r, g, b] = [1, 3, 5].map((at) => parseInt("${color}".slice(at, at + 2), 16));
      const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
      let count = 0;
      for (let at = 0; at < pixels.length; at += 4) if (pixels[at] === r && pixels[at + 1] === g && pixels[at + 2] === b && pixels[at + 3] === 255) count++;
      return count;
    })`)) as number[];

  test.serial("the charts draw under the portal's Content-Security-Policy, refusing nothing", async (t) => {
    const response = await page.goto(url);
    const csp = response?.headers()["content-security-policy"] ?? "";
    t.regex(csp, /script-src 'self'; style-src 'self'/);
    t.notRegex(csp, /unsafe/);
    await page.locator("figure.chart canvas").nth(1).waitFor();
    // Two charts and two sparklines; the chart without figures draws none.
    t.is(await page.locator("canvas").count(), 4);
    t.is(await page.getByRole("figure", { name: "Nothing yet" }).getByText("No figures for this period.").count(), 1);
    t.true(
      (await pixelsOf("#1f5fbf")).slice(0, 3).every((count) => count > 0),
      "the first series' blue is on every blue chart",
    );
    t.deepEqual(problems.errors, []);

    // A refused inline style is reported, as it would be from the charting library.
    const reported = page.waitForEvent("console", (message) => message.type() === "error");
    await page.evaluate(`document.querySelector("main").insertAdjacentHTML("beforeend", '<p id="inline" style="color: red">x</p>')`);
    t.regex((await reported).text(), /inline style violates the following Content Security Policy directive 'style-src 'self''/);
    problems.errors.length = 0;
    await page.evaluate(`document.getElementById("inline").remove()`);
  });

  test.serial("each chart's figures are in a table a keyboard opens, the same figures as drawn", async (t) => {
    const charts = [
      { title: "Notifications per hour", series: COUNTS, unit: "" },
      { title: "Attempt latency per hour", series: LATENCY, unit: " (ms)" },
    ];
    for (const chart of charts) {
      const table = page.getByRole("table", { name: chart.title });
      t.is(await table.count(), 0, "made when opened");
      await tabTo(page, `${chart.title}: the figures as a table`);
      await page.keyboard.press("Enter");
      await table.waitFor();
      t.deepEqual(await table.locator("thead th").allInnerTexts(), [
        "Period from",
        ...chart.series.map((line) => `${line.name}${chart.unit}`),
      ]);
      const rows = await table
        .locator("tbody tr")
        .evaluateAll((trs) =>
          trs.map((tr) => [
            tr.querySelector("time")?.getAttribute("datetime"),
            ...[...tr.querySelectorAll("td")].map((td) => td.textContent),
          ]),
        );
      t.deepEqual(
        rows,
        TIMES.map((time, index) => [
          new Date(time).toISOString(),
          ...chart.series.map((line) => line.values[index]?.toLocaleString("en-US") ?? "—"),
        ]),
        chart.title,
      );
    }
    // A sparkline is an image whose text is its figures.
    for (const endpoint of ENDPOINTS) {
      const figures = endpoint.p95.map((value) => (value === null ? "no figure" : `${value} ms`)).join(", ");
      await page.getByRole("img", { name: `${endpoint.origin}, p95 latency per hour, oldest first: ${figures}`, exact: true }).waitFor();
    }
    t.pass();
  });

  test.serial("pointing at a chart reads out that hour's figures", async (t) => {
    const plot = page.getByRole("figure", { name: "Notifications per hour" }).locator(".u-over");
    await plot.scrollIntoViewIfNeeded();
    const box = await plot.boundingBox();
    if (!box) throw new Error("the chart has no plotting area");
    await page.mouse.move(box.x + 2, box.y + box.height / 2);
    const readout = page.getByRole("figure", { name: "Notifications per hour" }).locator(".chart-readout");
    await readout.getByText(/: Accepted 120, Delivered 118, Failed for good 0, Failed attempts 4$/).waitFor();
    t.pass();
  });

  test.serial("light and dark: no serious accessibility violation, and the lines take the dark colours", async (t) => {
    t.deepEqual(await axeViolations(page), []);
    await page.emulateMedia({ colorScheme: "dark" });
    // Redrawn in the dark theme's blue, the light one gone.
    await page.waitForFunction(`getComputedStyle(document.body).backgroundColor === "rgb(21, 23, 26)"`);
    await t.notThrowsAsync(async () => {
      for (const deadline = Date.now() + 5_000; Date.now() < deadline; ) {
        if ((await pixelsOf("#7fb0ff"))[0] && !(await pixelsOf("#1f5fbf"))[0]) return;
        await page.waitForTimeout(50);
      }
      throw new Error("the first chart still draws in the light theme's colours");
    });
    t.deepEqual(await axeViolations(page), []);
    await page.emulateMedia({ colorScheme: "light" });
  });

  test.serial("on a phone-sized screen the charts shrink with the page", async (t) => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(
      `[...document.querySelectorAll("figure.chart canvas")].every((canvas) => canvas.getBoundingClientRect().right <= 390)`,
    );
    const overflow = Number(await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"));
    t.true(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
    t.deepEqual(problems.errors, []);
  });
}
