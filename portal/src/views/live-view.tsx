import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import { type DeliveryActivity, DeliveryActivityKind } from "../../../src/gen/webhooks/v1/delivery_service_pb.js";
import { deliveries, messageOf } from "../api.js";
import { ErrorText, Section } from "../components.js";
import { formatTime } from "../format.js";

const KEPT = 50;
const REPLAY_MS = 60_000;

function describe(activity: DeliveryActivity): string {
  const kind = DeliveryActivityKind[activity.kind].toLowerCase().replaceAll("_", " ");
  const parts = [kind, activity.jobId];
  if (activity.kind === DeliveryActivityKind.ATTEMPT_STARTED || activity.kind === DeliveryActivityKind.ATTEMPT_FINISHED)
    parts.push(`X-JobAttempt ${activity.attempt}`);
  if (activity.statusCode) parts.push(`HTTP ${activity.statusCode}`);
  if (activity.kind === DeliveryActivityKind.ATTEMPT_FINISHED) parts.push(`${activity.durationMs} ms`);
  if (activity.error) parts.push(activity.error);
  if (activity.reason) parts.push(activity.reason);
  if (activity.replayed) parts.push("(from the log)");
  return parts.join(" · ");
}

/**
 * The subscription's deliveries as they happen, from the WatchDeliveries
 * server stream (Connect over fetch). `onActivity` hears each one, so the
 * delivery log can follow.
 */
export function LiveView({ subscriptionId, onActivity }: { subscriptionId: string; onActivity: (activity: DeliveryActivity) => void }) {
  const [activities, setActivities] = useState<DeliveryActivity[]>([]);
  const [error, setError] = useState<string>();
  const [connected, setConnected] = useState(false);
  const [generation, setGeneration] = useState(0);
  // `generation` reconnects; `onActivity` is the one of the first render (callers keep it stable).
  useEffect(() => {
    const stop = new AbortController();
    const watch = async (since: Date | undefined) => {
      const stream = deliveries.watchDeliveries(
        { subscriptionId, ...(since ? { since: timestampFromDate(since) } : {}) },
        { signal: stop.signal },
      );
      setConnected(true);
      for await (const message of stream) {
        const activity = message.activity;
        if (!activity) continue;
        setActivities((shown) => [activity, ...shown].slice(0, KEPT));
        onActivity(activity);
      }
    };
    (async () => {
      setError(undefined);
      try {
        // The last minute is replayed first, so that nothing done while the stream opens (a sample sent at once) is missed.
        await watch(new Date(Date.now() - REPLAY_MS)).catch((failure) => {
          // This clock is ahead of the service's, or the minute holds too much to replay: live only.
          if (ConnectError.from(failure).code !== Code.InvalidArgument) throw failure;
          return watch(undefined);
        });
      } catch (failure) {
        if (!stop.signal.aborted) setError(messageOf(failure));
      } finally {
        if (!stop.signal.aborted) setConnected(false);
      }
    })();
    return () => stop.abort();
  }, [subscriptionId, generation]);
  return (
    <Section title="Live deliveries" id="live">
      <p class="hint">
        {connected ? "Watching: deliveries appear here as they happen." : "Not watching."}{" "}
        {!connected && (
          <button type="button" onClick={() => setGeneration((n) => n + 1)}>
            Reconnect
          </button>
        )}
      </p>
      <ErrorText error={error} />
      <div role="log" aria-live="polite" aria-label="Live deliveries">
        <ol class="live">
          {activities.map((activity, index) => (
            <li key={`${activity.jobId}-${activity.kind}-${activity.attempt}-${index}`}>
              <time>{formatTime(activity.occurredAt)}</time> {describe(activity)}
            </li>
          ))}
        </ol>
      </div>
    </Section>
  );
}
