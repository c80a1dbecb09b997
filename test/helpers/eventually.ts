import { setTimeout as sleep } from "node:timers/promises";

export interface PollOptions {
  /** How long to keep asking before giving up: 30 s unless told. */
  timeoutMs?: number;
  /** The pause between two asks: 100 ms unless told. */
  intervalMs?: number;
}

/**
 * Asks `probe` again and again, a pause apart, until it answers something
 * other than false or undefined, and returns that answer; throws an error
 * naming `what` was awaited once `timeoutMs` has passed. For conditions
 * nothing announces (a status in the store, a health endpoint, a lease).
 */
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  { timeoutMs = 30_000, intervalMs = 100 }: PollOptions = {},
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await probe();
    if (answer !== false && answer !== undefined) return answer as Exclude<T, false | undefined>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
