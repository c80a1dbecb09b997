import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { type Notification, NotificationStatus } from "../../../src/gen/webhooks/v1/delivery_service_pb.js";
import { deliveries } from "../api.js";
import { ErrorText, JsonBlock, Pager, Section, useAction, useLoad, usePages } from "../components.js";
import { formatTime, prettyJson } from "../format.js";
import { JobIdForm, type TimeRange, TimeRangeForm, timestampOf } from "./delivery-log-filters.js";

const PAGE_SIZE = 10;
const statusName = (status: NotificationStatus) => NotificationStatus[status].toLowerCase();

function NotificationDetails({
  subscriptionId,
  notification,
  refresh,
}: {
  subscriptionId: string;
  notification: Notification;
  refresh: number;
}) {
  const details = useLoad(
    async () => (await deliveries.getNotification({ subscriptionId, id: notification.id })).notification,
    [notification.id, notification.attemptCount, notification.status, refresh],
  );
  const redeliver = useAction();
  const [redelivered, setRedelivered] = useState<string>();
  const shown = details.value ?? notification;
  return (
    <div class="notification-details">
      <h4>Body</h4>
      <JsonBlock label={`Body of ${notification.id}`} text={prettyJson(shown.body)} />
      <h4>Attempts</h4>
      <ErrorText error={details.error} />
      {shown.attempts.length === 0 ? (
        <p class="hint">No attempt yet.</p>
      ) : (
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">X-JobAttempt</th>
                <th scope="col">Started</th>
                <th scope="col">Duration</th>
                <th scope="col">Status code</th>
                <th scope="col">Response excerpt</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {shown.attempts.map((attempt) => (
                <tr key={attempt.attempt} class={attempt.succeeded ? "ok" : "failed"}>
                  <td data-label="X-JobAttempt">{attempt.attempt}</td>
                  <td data-label="Started">{formatTime(attempt.startedAt)}</td>
                  <td data-label="Duration">{attempt.durationMs} ms</td>
                  <td data-label="Status code">{attempt.statusCode || "—"}</td>
                  <td data-label="Response excerpt">
                    <code class="excerpt">{attempt.responseBody}</code>
                  </td>
                  <td data-label="Error">{attempt.error}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <button
        type="button"
        disabled={redeliver.busy}
        onClick={() =>
          redeliver.run(async () => setRedelivered((await deliveries.redeliverNotification({ subscriptionId, id: notification.id })).jobId))
        }
      >
        Redeliver
      </button>
      {redelivered && <p role="status">Redelivery queued as {redelivered}.</p>}
      <ErrorText error={redeliver.error} />
    </div>
  );
}

function RecoverFailed({ subscriptionId, onRecovered }: { subscriptionId: string; onRecovered: () => void }) {
  const [since, setSince] = useState("");
  const [recovered, setRecovered] = useState<number>();
  const recover = useAction();
  return (
    <form
      class="inline"
      onSubmit={async (submitted) => {
        submitted.preventDefault();
        const done = await recover.run(async () => {
          const answer = await deliveries.recoverFailedNotifications({ subscriptionId, since: timestampFromDate(new Date(since)) });
          setRecovered(answer.jobIds.length);
        });
        if (done) onRecovered();
      }}
    >
      <label for="recover-since">Send failed notifications again, created since</label>
      <input id="recover-since" type="datetime-local" required value={since} onInput={(changed) => setSince(changed.currentTarget.value)} />
      <button type="submit" disabled={recover.busy}>
        Recover failed
      </button>
      {recovered !== undefined && <p role="status">{recovered} notification(s) queued again.</p>}
      <ErrorText error={recover.error} />
    </form>
  );
}

/** The subscription's notifications, newest first; `refresh` changes when the live view saw something. */
export function DeliveryLog({ subscriptionId, refresh }: { subscriptionId: string; refresh: number }) {
  const [status, setStatus] = useState(NotificationStatus.UNSPECIFIED);
  const [range, setRange] = useState<TimeRange>({ since: "", until: "" });
  const [jobId, setJobId] = useState("");
  const pages = usePages();
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [reloads, setReloads] = useState(0);
  const log = useLoad(async (): Promise<{ notifications: Notification[]; nextPageToken: string; missing?: string }> => {
    if (jobId) {
      try {
        const found = (await deliveries.getNotification({ subscriptionId, id: jobId })).notification;
        return { notifications: found ? [found] : [], nextPageToken: "" };
      } catch (failure) {
        return { notifications: [], nextPageToken: "", missing: failure instanceof Error ? failure.message : String(failure) };
      }
    }
    const since = timestampOf(range.since);
    const until = timestampOf(range.until);
    return deliveries.listNotifications({
      subscriptionId,
      status,
      ...(since ? { since } : {}),
      ...(until ? { until } : {}),
      pageSize: PAGE_SIZE,
      pageToken: pages.token,
    });
  }, [subscriptionId, status, range.since, range.until, jobId, pages.token, refresh, reloads]);
  const filtered = status !== NotificationStatus.UNSPECIFIED || range.since !== "" || range.until !== "";
  const toggle = (id: string) => {
    const next = new Set(open);
    if (!next.delete(id)) next.add(id);
    setOpen(next);
  };
  return (
    <Section title="Delivery log" id="log">
      <div class="inline">
        <label for="log-status">Status</label>
        <select
          id="log-status"
          value={String(status)}
          onChange={(changed) => {
            setStatus(Number(changed.currentTarget.value) as NotificationStatus);
            pages.reset();
          }}
        >
          <option value={String(NotificationStatus.UNSPECIFIED)}>All</option>
          <option value={String(NotificationStatus.PENDING)}>Pending</option>
          <option value={String(NotificationStatus.DELIVERED)}>Delivered</option>
          <option value={String(NotificationStatus.FAILED)}>Failed</option>
        </select>
        <button type="button" onClick={() => setReloads((n) => n + 1)}>
          Refresh
        </button>
      </div>
      <details class="log-filters">
        <summary>Time range and job id</summary>
        <TimeRangeForm
          range={range}
          onApply={(applied) => {
            setRange(applied);
            pages.reset();
          }}
        />
        <JobIdForm jobId={jobId} onFind={setJobId} />
      </details>
      <ErrorText error={log.error} />
      {jobId && log.value?.missing !== undefined && (
        <p role="status">
          No notification with job id {jobId} on this subscription ({log.value.missing}).
        </p>
      )}
      {!jobId && log.value?.notifications.length === 0 && <p>No notifications{filtered ? " that match" : ""} yet.</p>}
      <ul class="notifications">
        {log.value?.notifications.map((notification) => (
          <li key={notification.id} class={`notification ${statusName(notification.status)}`}>
            <button type="button" class="row" aria-expanded={open.has(notification.id)} onClick={() => toggle(notification.id)}>
              <span class={`badge ${statusName(notification.status)}`}>{statusName(notification.status)}</span>
              <span>{notification.event}</span>
              <span class="mono">{notification.id}</span>
              {notification.redeliveryOf && <span class="hint">redelivery of {notification.redeliveryOf}</span>}
              <span class="hint">
                {notification.attemptCount} attempt(s) · {formatTime(notification.createdAt)}
              </span>
            </button>
            {open.has(notification.id) && (
              <NotificationDetails subscriptionId={subscriptionId} notification={notification} refresh={refresh} />
            )}
          </li>
        ))}
      </ul>
      {!jobId && <Pager pages={pages} next={log.value?.nextPageToken} labels={["Newer", "Older"]} />}
      <RecoverFailed subscriptionId={subscriptionId} onRecovered={() => setReloads((n) => n + 1)} />
    </Section>
  );
}
