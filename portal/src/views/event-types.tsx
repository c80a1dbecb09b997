import type { JsonObject } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import type { EventType } from "../../../src/gen/webhooks/v1/subscription_pb.js";
import { events } from "../api.js";
import { ErrorText, Section, useAction, useLoad } from "../components.js";
import { prettyValue } from "../format.js";

/** The object a JSON text holds, or undefined for an empty text; throws a readable error otherwise. */
function parseObject(text: string, what: string): JsonObject | undefined {
  if (text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${what} must be a JSON object`);
  return value as JsonObject;
}

interface Draft {
  name: string;
  description: string;
  samplePayload: string;
  jsonSchema: string;
}

function EventTypeForm({ existing, onSaved }: { existing?: EventType; onSaved: () => void }) {
  const prefix = existing ? `edit-${existing.name}` : "register";
  const initial: Draft = {
    name: existing?.name ?? "",
    description: existing?.description ?? "",
    samplePayload: existing ? prettyValue(existing.samplePayload) : "{}",
    jsonSchema: existing?.jsonSchema ? prettyValue(existing.jsonSchema) : "",
  };
  const [draft, setDraft] = useState(initial);
  const save = useAction();
  const [saved, setSaved] = useState<string>();
  const field = (key: keyof Draft) => (changed: { currentTarget: { value: string } }) =>
    setDraft({ ...draft, [key]: changed.currentTarget.value });
  return (
    <form
      onSubmit={async (submitted) => {
        submitted.preventDefault();
        setSaved(undefined);
        const done = await save.run(async () => {
          const samplePayload = parseObject(draft.samplePayload, "The sample payload");
          const jsonSchema = parseObject(draft.jsonSchema, "The JSON Schema");
          if (existing)
            await events.updateEventType({
              name: existing.name,
              description: draft.description,
              ...(samplePayload ? { samplePayload } : {}),
              ...(jsonSchema ? { jsonSchema } : { clearJsonSchema: existing.jsonSchema !== undefined }),
            });
          else await events.registerEventType({ name: draft.name, description: draft.description, samplePayload, jsonSchema });
        });
        if (!done) return;
        setSaved(existing ? `Saved ${existing.name}.` : `Registered ${draft.name}.`);
        if (!existing) setDraft(initial);
        onSaved();
      }}
    >
      {!existing && (
        <>
          <label for={`${prefix}-name`}>Name</label>
          <input id={`${prefix}-name`} type="text" required value={draft.name} onInput={field("name")} />
        </>
      )}
      <label for={`${prefix}-description`}>Description</label>
      <input id={`${prefix}-description`} type="text" value={draft.description} onInput={field("description")} />
      <label for={`${prefix}-sample`}>Sample payload (JSON object)</label>
      <textarea id={`${prefix}-sample`} rows={5} class="mono" value={draft.samplePayload} onInput={field("samplePayload")} />
      <label for={`${prefix}-schema`}>JSON Schema (JSON object; empty: none)</label>
      <textarea id={`${prefix}-schema`} rows={6} class="mono" value={draft.jsonSchema} onInput={field("jsonSchema")} />
      <ErrorText error={save.error} />
      <button type="submit" disabled={save.busy}>
        {existing ? `Save ${existing.name}` : "Register event type"}
      </button>
      {saved && <p role="status">{saved}</p>}
    </form>
  );
}

export function EventTypes() {
  const list = useLoad(async () => (await events.listEventTypes({})).eventTypes, []);
  const [editing, setEditing] = useState<string>();
  return (
    <Section title="Event types" id="event-types">
      <ErrorText error={list.error} />
      <ul class="event-types">
        {list.value?.map((type) => (
          <li key={type.name}>
            <strong>{type.name}</strong> <span>{type.description}</span>{" "}
            <button
              type="button"
              aria-expanded={editing === type.name}
              onClick={() => setEditing(editing === type.name ? undefined : type.name)}
            >
              Edit {type.name}
            </button>
            {editing === type.name && <EventTypeForm existing={type} onSaved={list.reload} />}
          </li>
        ))}
      </ul>
      <h3>Register an event type</h3>
      <EventTypeForm onSaved={list.reload} />
    </Section>
  );
}
