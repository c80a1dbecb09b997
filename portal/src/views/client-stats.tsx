import { useState } from "preact/hooks";
import { deliveries } from "../api.js";
import { ErrorText, Section, useLoad } from "../components.js";
import { DeliveryFigures, type Range, RangePicker, stepName } from "./delivery-stats.js";
import { EndpointHealthTable } from "./endpoint-health.js";

/** The signed-in client's own delivery figures over a range, and its endpoints' health. */
export function ClientStats() {
  const [range, setRange] = useState<Range>("1h");
  const stats = useLoad(async () => (await deliveries.getClientDeliveryStats({ range })).stats, [range]);
  const value = stats.value;
  return (
    <Section title="Your deliveries" id="stats">
      <RangePicker id="stats-range" range={range} onChange={setRange} />
      <p>
        <button type="button" onClick={stats.reload}>
          Refresh figures
        </button>
      </p>
      <ErrorText error={stats.error} />
      {value && (
        <>
          <DeliveryFigures stats={value} />
          <h3>Your endpoints</h3>
          <EndpointHealthTable endpoints={value.endpoints} step={stepName(value)} />
        </>
      )}
    </Section>
  );
}
