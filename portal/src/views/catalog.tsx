import { subscriptions } from "../api.js";
import { ErrorText, JsonBlock, useLoad } from "../components.js";
import { prettyValue } from "../format.js";

export function CatalogView() {
  const catalog = useLoad(async () => (await subscriptions.listEvents({})).events, []);
  return (
    <>
      <h1>Event catalog</h1>
      <ErrorText error={catalog.error} />
      {catalog.value?.length === 0 && <p>No event types are registered yet.</p>}
      {catalog.value?.map((type) => (
        <article class="card" key={type.name} aria-labelledby={`event-${type.name}`}>
          <h2 id={`event-${type.name}`}>{type.name}</h2>
          <p>{type.description}</p>
          <div class="columns">
            <div>
              <h3>Sample payload</h3>
              <JsonBlock label={`${type.name} sample payload`} text={prettyValue(type.samplePayload)} />
            </div>
            <div>
              <h3>JSON Schema</h3>
              {type.jsonSchema ? (
                <JsonBlock label={`${type.name} JSON Schema`} text={prettyValue(type.jsonSchema)} />
              ) : (
                <p class="hint">No schema: any object is accepted.</p>
              )}
            </div>
          </div>
        </article>
      ))}
    </>
  );
}
