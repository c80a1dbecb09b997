import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { KeyWatch } from "../../domain/client-access.js";
import type { Outcome } from "../../domain/delivery-activity.js";
import type { DeliveryWatches, WatchRequest } from "../../domain/delivery-watch.js";
import { type DeliveryActivity as DeliveryActivityMessage, DeliveryOutcome } from "../../gen/webhooks/v1/delivery_service_pb.js";
import { toActivityMessage } from "./messages.js";

/** With nothing to send for this long, a stream sends a message without activity, so that idle proxies keep it open. */
export const KEEP_ALIVE_MS = 15_000;

/** The filter fields both watch requests share, as the domain takes them. */
export function watchRequestOf(
  clientId: string | undefined,
  req: { subscriptionId: string; event: string; outcome: DeliveryOutcome; since?: Timestamp | undefined; relaySubscriptionIds?: string[] },
): WatchRequest {
  const outcome: Outcome | undefined =
    req.outcome === DeliveryOutcome.SUCCEEDED ? "succeeded" : req.outcome === DeliveryOutcome.FAILED ? "failed" : undefined;
  return {
    ...(clientId !== undefined ? { clientId } : {}),
    ...(req.subscriptionId ? { subscriptionId: req.subscriptionId } : {}),
    ...(req.event ? { event: req.event } : {}),
    ...(outcome ? { outcome } : {}),
    ...(req.since ? { since: timestampDate(req.since) } : {}),
    ...(req.relaySubscriptionIds?.length ? { relaySubscriptionIds: req.relaySubscriptionIds } : {}),
  };
}

/**
 * The stream of one watch: the replay, one message without activity (the
 * watch is in place), then live activities, with a keep-alive after each
 * KEEP_ALIVE_MS of silence. Ends when the client goes away (`signal`) or
 * the service stops; a watcher that fell behind ends with its error.
 */
export async function* streamWatch(
  watches: DeliveryWatches,
  request: WatchRequest,
  signal: AbortSignal,
): AsyncGenerator<{ activity?: DeliveryActivityMessage }> {
  const watch = await watches.open(request);
  const close = () => watch.close();
  signal.addEventListener("abort", close, { once: true });
  let keepAlive: NodeJS.Timeout | undefined;
  try {
    for (const activity of watch.replay) yield { activity: toActivityMessage(activity) };
    yield {};
    for (;;) {
      const quiet = await Promise.race([
        watch.waitForActivity().then(() => false),
        new Promise<boolean>((resolve) => {
          keepAlive = setTimeout(() => resolve(true), KEEP_ALIVE_MS);
        }),
      ]);
      clearTimeout(keepAlive);
      if (quiet) {
        yield {};
        continue;
      }
      const activity = await watch.next();
      if (!activity) return;
      yield { activity: toActivityMessage(activity) };
    }
  } finally {
    clearTimeout(keepAlive);
    signal.removeEventListener("abort", close);
    watch.close();
  }
}

/**
 * A stream that ends, with the error its key watch gives, once the key it
 * was opened with no longer holds (revoked, its client disabled or deleted).
 */
export async function* whileKeyHolds<T>(keyWatch: KeyWatch, stream: (signal: AbortSignal) => AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* stream(keyWatch.signal);
    if (keyWatch.signal.aborted) throw keyWatch.signal.reason;
  } finally {
    keyWatch.release();
  }
}
