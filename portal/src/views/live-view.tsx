import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import { type DeliveryActivity, DeliveryActivityKind } from "../../../src/gen/webhooks/v1/delivery_service_pb.js";
import { deliveries, messageOf } from "../api.js";
import { ErrorText, Section } from "../components.js";
import { formatTime } from "../format.js";

const KEPT = 50;
const REPLAY_MS = 60_000;
const RECONNECT_MS = 1_000;

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

/** Whether a watch ended because the service went away (a restart), not because of the request: then it is opened again. */
function serviceWentAway(failure: unknown): boolean {
  if (failure === undefined) return true;
  const code = ConnectError.from(failure).code;
  return code === Code.Unavailable || code === Code.Unknown || code === Code.Canceled || code === Code.Aborted;
}

const keyOf = (activity: DeliveryActivity) => `${activity.jobId}-${activity.kind}-${activity.attempt}`;

/**
 * The subscription's deliveries as they happen, from the WatchDeliveries
 * server stream (Connect over fetch). `onActivity` hears each one, so the
 * delivery log can follow. When the service goes away (a restart), the
 * watch is opened again from the last activity seen, so nothing is missed.
 */
export function LiveView({ subscriptionId, onActivity }: { subscriptionId: string; onActivity: (activity: DeliveryActivity) => void }) {
  const [activities, setActivities] = useState<DeliveryActivity[]>([]);
  const [error, setError] = useState<string>();
  const [state, setState] = useState<"connecting" | "watching" | "reconnecting" | "stopped">("connecting");
  const [generation, setGeneration] = useState(0);
  // `generation` reconnects; `onActivity` is the one of the first render (callers keep it stable).
  useEffect(() => {
    const stop = new AbortController();
    // The last minute is replayed first, so that nothing done while the stream opens (a sample sent at once) is missed.
    let since: Date | undefined = new Date(Date.now() - REPLAY_MS);
    const watch = async () => {
      const stream = deliveries.watchDeliveries(
        { subscriptionId, ...(since ? { since: timestampFromDate(since) } : {}) },
        { signal: stop.signal },
      );
      for await (const message of stream) {
        setState("watching");
        setError(undefined);
        const activity = message.activity;
        if (!activity) continue;
        if (activity.occurredAt) since = timestampDate(activity.occurredAt);
        // A replay after a reconnection starts at the last activity shown: shown once.
        setActivities((shown) =>
          activity.replayed && shown.some((each) => keyOf(each) === keyOf(activity)) ? shown : [activity, ...shown].slice(0, KEPT),
        );
        onActivity(activity);
      }
    };
    (async () => {
      setError(undefined);
      for (;;) {
        let ended: unknown;
        try {
          await watch();
        } catch (failure) {
          ended = failure;
        }
        if (stop.signal.aborted) return;
        // This clock is ahead of the service's, or the minute holds too much to replay: live only.
        if (ended !== undefined && ConnectError.from(ended).code === Code.InvalidArgument && since) {
          since = undefined;
          continue;
        }
        if (!serviceWentAway(ended)) {
          setError(messageOf(ended));
          setState("stopped");
          return;
        }
        setState("reconnecting");
        // From the moment it went away, when nothing was seen: what happens meanwhile is replayed.
        since ??= new Date();
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
        if (stop.signal.aborted) return;
      }
    })();
    return () => stop.abort();
  }, [subscriptionId, generation]);
  const said = {
    connecting: "Connecting…",
    watching: "Watching: deliveries appear here as they happen.",
    reconnecting: "The service is not answering: reconnecting…",
    stopped: "Not watching.",
  }[state];
  return (
    <Section title="Live deliveries" id="live">
      <p class="hint" role="status">
        {said}{" "}
        {state === "stopped" && (
          <button type="button" onClick={() => setGeneration((n) => n + 1)}>
            Reconnect
          </button>
        )}
      </p>
      <ErrorText error={error} />
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must be reachable by keyboard to scroll it. */}
      <div class="live" role="log" aria-live="polite" aria-label="Live deliveries" tabIndex={0}>
        <ul>
          {activities.map((activity, index) => (
            <li key={`${keyOf(activity)}-${index}`}>
              <time>{formatTime(activity.occurredAt)}</time> {describe(activity)}
            </li>
          ))}
        </ul>
      </div>
    </Section>
  );
}
