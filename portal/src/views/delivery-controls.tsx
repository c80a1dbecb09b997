import type { JsonObject } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import type { Subscription } from "../../../src/gen/webhooks/v1/subscription_pb.js";
import { subscriptions } from "../api.js";
import { ErrorText, Section, useAction } from "../components.js";

/** `Name: value` lines (blank lines skipped) as a header map; the service checks names and values. */
export function parseHeaderLines(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`Headers, line ${i + 1}: write "Name: value", e.g. "X-Api-Key: s3cr3t"`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** The filter typed in: an empty box is no filter (`{}`). */
export function parseFilterText(text: string): JsonObject {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`Filter: not JSON (${(error as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error('Filter: a JSON object, e.g. {"Currency": "EUR"}');
  return value as JsonObject;
}

export const HEADERS_HINT = 'One "Name: value" a line, e.g. X-Api-Key: s3cr3t. Values are shown only as ••••.';
export const FILTER_HINT = 'A JSON object, e.g. {"Currency": {"$in": ["EUR", "CHF"]}, "TotalAmount": {"$gte": 100}}.';

/** The subscription's custom headers (names only: values are write-only) and its payload filter, each replaced whole. */
export function DeliveryControls({ subscription, onSaved }: { subscription: Subscription; onSaved: (updated: Subscription) => void }) {
  const names = Object.keys(subscription.headers);
  const [headers, setHeaders] = useState("");
  const [filter, setFilter] = useState(subscription.filter ? JSON.stringify(subscription.filter, null, 2) : "");
  const [saved, setSaved] = useState<string>();
  const saveHeaders = useAction();
  const saveFilter = useAction();
  const update = async (changes: { headers: JsonObject } | { filter: JsonObject }, what: string) => {
    const answer = await subscriptions.updateSubscription({ id: subscription.id, ...changes });
    if (answer.subscription) onSaved(answer.subscription);
    setSaved(what);
  };
  return (
    <Section title="Headers and filter" id="controls">
      <form
        onSubmit={async (submitted) => {
          submitted.preventDefault();
          setSaved(undefined);
          await saveHeaders.run(() => update({ headers: parseHeaderLines(headers) }, "Headers saved."));
        }}
      >
        <p>{names.length === 0 ? "No custom headers." : `Sent with every delivery: ${names.join(", ")}.`}</p>
        <label for="edit-headers">New headers (replace all; an empty box removes them)</label>
        <textarea
          id="edit-headers"
          class="mono"
          rows={3}
          value={headers}
          placeholder={HEADERS_HINT}
          onInput={(changed) => setHeaders(changed.currentTarget.value)}
        />
        <ErrorText error={saveHeaders.error} />
        <button type="submit" disabled={saveHeaders.busy}>
          Save headers
        </button>
      </form>
      <form
        onSubmit={async (submitted) => {
          submitted.preventDefault();
          setSaved(undefined);
          await saveFilter.run(() => update({ filter: parseFilterText(filter) }, "Filter saved."));
        }}
      >
        <label for="edit-filter">Payload filter (empty: every notification)</label>
        <textarea
          id="edit-filter"
          class="mono"
          rows={4}
          value={filter}
          placeholder={FILTER_HINT}
          onInput={(changed) => setFilter(changed.currentTarget.value)}
        />
        <ErrorText error={saveFilter.error} />
        <button type="submit" disabled={saveFilter.busy}>
          Save filter
        </button>
      </form>
      {saved && <p role="status">{saved}</p>}
    </Section>
  );
}
