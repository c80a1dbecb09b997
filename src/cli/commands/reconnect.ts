import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";

/** How long to wait before opening a watch again once the service closed it or went away. */
const RETRY_DELAY_MS = 1_000;

/**
 * Whether a watch that was in place ended because the service went away
 * (stopped, restarting, unreachable) rather than because of the request:
 * then it is worth opening again. `error` is undefined when the service
 * ended the stream itself, as it does when it stops.
 */
export function serviceWentAway(error?: unknown): boolean {
  if (error === undefined) return true;
  const code = ConnectError.from(error).code;
  return code === Code.Unavailable || code === Code.Unknown || code === Code.Aborted || code === Code.Canceled;
}

/** Why a watch ended, for the line that says so. */
export function whyEnded(error?: unknown): string {
  return error === undefined ? "the service closed the stream" : ConnectError.from(error).rawMessage;
}

/** Waits before the next try; false when interrupted meanwhile (Ctrl-C), so that the caller stops. */
export async function waitToReconnect(interrupt: AbortSignal): Promise<boolean> {
  if (interrupt.aborted) return false;
  try {
    await sleep(RETRY_DELAY_MS, undefined, { signal: interrupt });
    return true;
  } catch {
    return false;
  }
}
