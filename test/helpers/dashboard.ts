import type { Locator, Page } from "playwright-core";
import { adminAuth } from "./admin.js";
import { eventually } from "./eventually.js";
import { Receiver } from "./receiver.js";
import { rest } from "./service.js";

/**
 * The portal dashboard's tests' common parts: a known mix of receivers, and
 * reading the figures the dashboard shows (its totals, and the charts'
 * tables).
 */

/** Attempts a notification to an endpoint that always fails makes (the first and five retries). */
export const ATTEMPTS_EACH = 6;

/** A receiver that answers 200, one that always answers 503, and one that fails each notification's first attempt only. */
export interface ReceiverMix {
  healthy: Receiver;
  failing: Receiver;
  flaky: Receiver;
}

export async function startReceiverMix(): Promise<ReceiverMix> {
  return {
    healthy: await Receiver.start(),
    failing: await Receiver.start(() => ({ status: 503, body: "busy" })),
    flaky: await Receiver.start((request) => (request.headers["x-jobattempt"] === "0" ? { status: 500, body: "once" } : { status: 200 })),
  };
}

export async function closeReceiverMix(mix: ReceiverMix | undefined): Promise<void> {
  for (const receiver of [mix?.healthy, mix?.failing, mix?.flaky]) await receiver?.close();
}

/** Subscribes `auth`'s client to `event` at each receiver of the mix. */
export async function subscribeMix(baseUrl: string, auth: Record<string, string>, mix: ReceiverMix, event: string): Promise<void> {
  for (const receiver of [mix.healthy, mix.failing, mix.flaky]) await subscribe(baseUrl, auth, event, receiver.url);
}

/** Subscribes `url` to `event` for the client of `auth`. */
export async function subscribe(baseUrl: string, auth: Record<string, string>, event: string, url: string): Promise<void> {
  const created = await rest(baseUrl, "POST", "/api/webhookSubscription", { event, url }, auth);
  if (created.status !== 200) throw new Error(`create subscription: ${created.text}`);
}

/** What `events` notifications to each receiver of the mix add up to. */
export function mixFigures(events: number): { accepted: number; delivered: number; failed: number; failedAttempts: number } {
  return { accepted: events * 3, delivered: events * 2, failed: events, failedAttempts: events * ATTEMPTS_EACH + events };
}

/** Waits until every receiver of the mix has had the attempts `events` notifications make. */
export async function mixAnswered(mix: ReceiverMix, events: number): Promise<void> {
  await mix.failing.waitFor(events * ATTEMPTS_EACH);
  await mix.flaky.waitFor(events * 2);
  await mix.healthy.waitFor(events);
}

/**
 * Waits until the stats of the last hour, read through `baseUrl`, count
 * `ended` notifications delivered or failed for good: the figures are
 * recorded as each delivery ends, just after the receiver answered.
 */
export async function statsCountEnded(baseUrl: string, clientId: string, ended: number): Promise<void> {
  await eventually(`the stats to count ${ended} ended notifications`, async () => {
    const stats = await rest(baseUrl, "GET", `/api/internal/stats?range=1h&clientId=${clientId}`, undefined, adminAuth);
    const totals = (stats.json.stats as { totals?: Record<string, string> } | undefined)?.totals ?? {};
    return Number(totals.delivered ?? 0) + Number(totals.failed ?? 0) >= ended;
  });
}

/** Opens a chart's table and sums each of its columns (a count spread over the range's steps). */
export async function columnSums(page: Page, chart: string): Promise<Record<string, number>> {
  const table = page.getByRole("table", { name: chart });
  // Opened once, the table stays open as the range changes.
  if ((await table.count()) === 0) await page.getByText(`${chart}: the figures as a table`).click();
  await table.waitFor();
  const headings = await table.locator("thead th").allInnerTexts();
  const rows = await table
    .locator("tbody tr")
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => Number((td.textContent ?? "").replace(/,/g, "")))));
  const sums: Record<string, number> = {};
  headings.slice(1).forEach((heading, column) => {
    sums[heading] = rows.reduce((sum, row) => sum + (row[column] ?? 0), 0);
  });
  return sums;
}

/** The totals shown above the charts, by name. */
export async function totals(section: Locator): Promise<Record<string, number>> {
  const figures = section.locator("dl.figures-totals > div");
  await figures.first().waitFor();
  const pairs = await figures.evaluateAll((divs) =>
    divs.map((div) => [div.querySelector("dt")?.textContent ?? "", Number((div.querySelector("dd")?.textContent ?? "").replace(/,/g, ""))]),
  );
  return Object.fromEntries(pairs);
}
