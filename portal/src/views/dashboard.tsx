import { events } from "../api.js";
import { ErrorText, Section, useLoad } from "../components.js";
import { formatTime } from "../format.js";

export function Dashboard() {
  const dashboard = useLoad(() => events.getDeliveryDashboard({}), []);
  const value = dashboard.value;
  return (
    <Section title="This instance, last hour" id="dashboard">
      <ErrorText error={dashboard.error} />
      {value && (
        <>
          <p class="hint">
            Since {formatTime(value.since)}.{" "}
            <button type="button" onClick={dashboard.reload}>
              Refresh
            </button>
          </p>
          <dl class="figures">
            <div>
              <dt>Delivered</dt>
              <dd>{value.delivered}</dd>
            </div>
            <div>
              <dt>Failed</dt>
              <dd>{value.failed}</dd>
            </div>
            <div>
              <dt>Failed attempts</dt>
              <dd>{value.failedAttempts}</dd>
            </div>
            <div>
              <dt>Pending now</dt>
              <dd>{value.pending}</dd>
            </div>
          </dl>
          <h3>Slowest endpoints</h3>
          {value.slowestEndpoints.length === 0 ? (
            <p class="hint">No attempts in the last hour.</p>
          ) : (
            <div class="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th scope="col">URL</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Average</th>
                    <th scope="col">Slowest</th>
                    <th scope="col">Failed</th>
                  </tr>
                </thead>
                <tbody>
                  {value.slowestEndpoints.map((endpoint) => (
                    <tr key={endpoint.url}>
                      <td class="url" data-label="URL">
                        {endpoint.url}
                      </td>
                      <td data-label="Attempts">{endpoint.attempts}</td>
                      <td data-label="Average">{endpoint.averageMs} ms</td>
                      <td data-label="Slowest">{endpoint.maxMs} ms</td>
                      <td data-label="Failed">{endpoint.failedAttempts}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h3>Disabled subscriptions</h3>
          {value.disabledSubscriptions.length === 0 ? (
            <p class="hint">None disabled in the last hour.</p>
          ) : (
            <ul>
              {value.disabledSubscriptions.map((disabled) => (
                <li key={disabled.subscriptionId}>
                  <span class="mono">{disabled.subscriptionId}</span> ({disabled.event}, client{" "}
                  <span class="mono">{disabled.clientId}</span>), <span class="url">{disabled.url}</span>: {disabled.reason},{" "}
                  {formatTime(disabled.disabledAt)}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </Section>
  );
}
