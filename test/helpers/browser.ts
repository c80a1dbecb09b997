import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { TestFn } from "ava";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's chromium (apt-get install chromium); .ci/run installs it. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * False where there is no Chromium: the file then registers one test that says
 * so (and passes) instead of its own.
 */
export function chromiumOrSkip(test: TestFn, what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  test(`${what} need Chromium (${CHROMIUM})`, (t) => {
    t.log(`!!! SKIPPED: no Chromium at ${CHROMIUM}; install it with \`apt-get install -y chromium\` to run ${what}`);
    t.pass();
  });
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

/**
 * Collects what the portal should never cause: browser dialogs (dismissed),
 * uncaught errors, and console errors other than a refused call's "Failed to
 * load resource" (a refused script, style or connection under the CSP is one).
 */
export function watchForProblems(page: Page): { dialogs: string[]; errors: string[] } {
  const dialogs: string[] = [];
  const errors: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) errors.push(message.text());
  });
  return { dialogs, errors };
}

const AXE_SOURCE = readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Runs axe-core on the page as it is now and answers its serious and critical
 * violations, one readable line per element (rule, impact, element, why).
 * axe is evaluated through the DevTools protocol, which the page's
 * Content-Security-Policy does not govern: the page keeps its own policy.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(await AXE_SOURCE);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ["violations"] }).then((results) => results.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })),
    })))`,
  )) as Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string; summary: string }> }>;
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .flatMap((violation) =>
      violation.nodes.map((node) => `${violation.id} (${violation.impact}): ${violation.help} — ${node.target}: ${node.summary}`),
    );
}

/** What has the keyboard focus: its name as a person reads it (label, aria-label or text), and whether it is visibly outlined. */
export async function focusedControl(page: Page): Promise<{ name: string; outlined: boolean }> {
  return (await page.evaluate(`(() => {
    const element = document.activeElement;
    if (!element || element === document.body) return { name: "(nothing)", outlined: false };
    const label = element.labels?.[0]?.textContent ?? element.getAttribute("aria-label") ?? element.textContent ?? "";
    const style = getComputedStyle(element);
    return { name: label.trim(), outlined: element.matches(":focus-visible") && style.outlineStyle !== "none" && style.outlineWidth !== "0px" };
  })()`)) as { name: string; outlined: boolean };
}

/**
 * Presses Tab until the control named `name` has the focus, at most `limit`
 * times; answers the name of each control passed on the way. Throws when a
 * control takes the focus without a visible outline, or `name` is not reached.
 */
export async function tabTo(page: Page, name: string, limit = 30): Promise<string[]> {
  const passed: string[] = [];
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press("Tab");
    const now = await focusedControl(page);
    if (!now.outlined) throw new Error(`${now.name} has the focus but no visible outline`);
    passed.push(now.name);
    if (now.name === name) return passed;
  }
  throw new Error(`${name} not reached in ${limit} presses of Tab: ${passed.join(" → ")}`);
}
