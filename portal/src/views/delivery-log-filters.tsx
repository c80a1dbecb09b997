import { type Timestamp, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";

/** The delivery log's time range as typed (datetime-local values, the browser's time zone); "" is open. */
export interface TimeRange {
  since: string;
  until: string;
}

/** A datetime-local value as a Timestamp, or undefined when empty. */
export function timestampOf(local: string): Timestamp | undefined {
  return local === "" ? undefined : timestampFromDate(new Date(local));
}

/** The created-from / created-before fields, applied together. */
export function TimeRangeForm({ range, onApply }: { range: TimeRange; onApply: (range: TimeRange) => void }) {
  const [since, setSince] = useState(range.since);
  const [until, setUntil] = useState(range.until);
  return (
    <form
      class="inline"
      aria-label="Time range"
      onSubmit={(submitted) => {
        submitted.preventDefault();
        onApply({ since, until });
      }}
    >
      <label for="log-since">Created from</label>
      <input id="log-since" type="datetime-local" step="1" value={since} onInput={(changed) => setSince(changed.currentTarget.value)} />
      <label for="log-until">Created before</label>
      <input id="log-until" type="datetime-local" step="1" value={until} onInput={(changed) => setUntil(changed.currentTarget.value)} />
      <button type="submit">Apply</button>
      {(range.since || range.until) && (
        <button
          type="button"
          onClick={() => {
            setSince("");
            setUntil("");
            onApply({ since: "", until: "" });
          }}
        >
          Any time
        </button>
      )}
    </form>
  );
}

/** Finds one notification by its job id (X-JobId); "" goes back to the log. */
export function JobIdForm({ jobId, onFind }: { jobId: string; onFind: (jobId: string) => void }) {
  const [typed, setTyped] = useState(jobId);
  return (
    <form
      class="inline"
      aria-label="Find a job"
      onSubmit={(submitted) => {
        submitted.preventDefault();
        onFind(typed.trim());
      }}
    >
      <label for="log-job">Job id</label>
      <input id="log-job" class="mono" placeholder="ntf_…" value={typed} onInput={(changed) => setTyped(changed.currentTarget.value)} />
      <button type="submit">Find</button>
      {jobId && (
        <button
          type="button"
          onClick={() => {
            setTyped("");
            onFind("");
          }}
        >
          Show the log
        </button>
      )}
    </form>
  );
}
