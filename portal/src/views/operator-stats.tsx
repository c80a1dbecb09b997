import { useState } from "preact/hooks";
import { events } from "../api.js";
import { ErrorText, Section, useLoad } from "../components.js";
import { DeliveryFigures, type Range, RangePicker, stepName } from "./delivery-stats.js";
import { EndpointHealthTable } from "./endpoint-health.js";

/**
 * Every client's delivery figures over a range (or one client's), from the
 * store: what every instance did, surviving restarts. The endpoint table's
 * client buttons narrow the figures to that client.
 */
export function OperatorStats() {
  const [range, setRange] = useState<Range>("1h");
  const [clientId, setClientId] = useState("");
  const stats = useLoad(async () => (await events.getDeliveryStats({ range, clientId })).stats, [range, clientId]);
  const value = stats.value;
  return (
    <Section title="Deliveries" id="stats">
      <RangePicker id="stats-range" range={range} onChange={setRange} />
      {clientId && (
        <p>
          Client <span class="mono">{clientId}</span> only.{" "}
          <button type="button" onClick={() => setClientId("")}>
            Show every client
          </button>
        </p>
      )}
      <p class="hint">
        Every instance's figures, from the store.{" "}
        <button type="button" onClick={stats.reload}>
          Refresh figures
        </button>
      </p>
      <ErrorText error={stats.error} />
      {value && (
        <>
          <DeliveryFigures stats={value} />
          <h3>Endpoint health</h3>
          <EndpointHealthTable endpoints={value.endpoints} step={stepName(value)} onClient={setClientId} />
        </>
      )}
    </Section>
  );
}
