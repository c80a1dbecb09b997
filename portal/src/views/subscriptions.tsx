import { useState } from "preact/hooks";
import { subscriptions } from "../api.js";
import { ErrorText, Pager, Section, useAction, useLoad, usePages } from "../components.js";
import { formatTime } from "../format.js";
import { href, navigate } from "../router.js";
import { ClientStats } from "./client-stats.js";
import { FILTER_HINT, HEADERS_HINT, parseFilterText, parseHeaderLines } from "./delivery-controls.js";

function CreateSubscription({ onCreated }: { onCreated: () => void }) {
  const catalog = useLoad(async () => (await subscriptions.listEvents({})).events, []);
  const [event, setEvent] = useState("");
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [headers, setHeaders] = useState("");
  const [filter, setFilter] = useState("");
  const create = useAction();
  const chosen = event || catalog.value?.[0]?.name || "";
  return (
    <Section title="New subscription" id="create">
      <ErrorText error={catalog.error} />
      <form
        onSubmit={async (submitted) => {
          submitted.preventDefault();
          let id = "";
          const created = await create.run(async () => {
            const request = { event: chosen, url, description, headers: parseHeaderLines(headers), filter: parseFilterText(filter) };
            id = (await subscriptions.createSubscription(request)).subscription?.id ?? "";
          });
          if (!created) return;
          setUrl("");
          setDescription("");
          setHeaders("");
          setFilter("");
          onCreated();
          navigate("subscriptions", id);
        }}
      >
        <label for="create-event">Event</label>
        <select id="create-event" value={chosen} onChange={(changed) => setEvent(changed.currentTarget.value)}>
          {catalog.value?.map((type) => (
            <option key={type.name} value={type.name}>
              {type.name}
            </option>
          ))}
        </select>
        <label for="create-url">Receiver URL</label>
        <input
          id="create-url"
          type="text"
          inputMode="url"
          required
          value={url}
          onInput={(changed) => setUrl(changed.currentTarget.value)}
          aria-invalid={create.error ? true : undefined}
          aria-describedby={create.error ? "create-error" : undefined}
        />
        <ErrorText error={create.error} id="create-error" />
        <label for="create-description">Description (optional)</label>
        <input id="create-description" type="text" value={description} onInput={(changed) => setDescription(changed.currentTarget.value)} />
        <label for="create-headers">Headers sent with every delivery (optional)</label>
        <textarea
          id="create-headers"
          rows={2}
          value={headers}
          placeholder={HEADERS_HINT}
          onInput={(changed) => setHeaders(changed.currentTarget.value)}
        />
        <label for="create-filter">Payload filter (optional: every notification without one)</label>
        <textarea
          id="create-filter"
          rows={2}
          value={filter}
          placeholder={FILTER_HINT}
          onInput={(changed) => setFilter(changed.currentTarget.value)}
        />
        <button type="submit" disabled={create.busy}>
          Create subscription
        </button>
      </form>
    </Section>
  );
}

export function SubscriptionsView() {
  const pages = usePages();
  const list = useLoad(() => subscriptions.listSubscriptions({ pageSize: 20, pageToken: pages.token }), [pages.token]);
  return (
    <>
      <h1>Subscriptions</h1>
      <Section title="Your subscriptions" id="list">
        <ErrorText error={list.error} />
        {list.value?.subscriptions.length === 0 && <p>No subscriptions yet: create one below.</p>}
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">URL</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.value?.subscriptions.map((subscription) => (
                <tr key={subscription.id}>
                  <td data-label="Event">
                    <a href={href("subscriptions", subscription.id)}>{subscription.event}</a>
                    {subscription.description && <div class="hint">{subscription.description}</div>}
                  </td>
                  <td class="url" data-label="URL">
                    {subscription.url || "(relay)"}
                  </td>
                  <td data-label="State">
                    {subscription.enabled ? "Enabled" : "Disabled"}
                    {subscription.disabledReason && <div class="hint">{subscription.disabledReason}</div>}
                  </td>
                  <td data-label="Created">{formatTime(subscription.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <Pager pages={pages} next={list.value?.nextPageToken} labels={["Previous page", "Next page"]} />
      </Section>
      <ClientStats />
      <CreateSubscription onCreated={list.reload} />
    </>
  );
}
