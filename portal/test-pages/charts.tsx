import "../src/styles.css";
import { render } from "preact";
import { Sparkline } from "../src/charts/sparkline.js";
import { TimeSeriesChart } from "../src/charts/time-series-chart.js";
import { COUNTS, ENDPOINTS, LATENCY, TIMES } from "./chart-figures.js";

/**
 * A page for test/portal/charts.test.ts only: the portal's charts on figures
 * the test knows, served under the portal's Content-Security-Policy. It is not
 * part of the built portal (tools/build-portal.ts bundles src/main.tsx).
 */
function ChartsPage() {
  return (
    <>
      <header>
        <span class="brand">Charts</span>
      </header>
      <main id="main">
        <h1>Charts</h1>
        <section class="card" aria-labelledby="series-title">
          <h2 id="series-title">Over time</h2>
          <TimeSeriesChart title="Notifications per hour" times={TIMES} series={COUNTS} area />
          <TimeSeriesChart title="Attempt latency per hour" times={TIMES} series={LATENCY} unit="ms" />
          <TimeSeriesChart title="Nothing yet" times={[]} series={[]} />
        </section>
        <section class="card" aria-labelledby="endpoints-title">
          <h2 id="endpoints-title">Endpoints</h2>
          <table>
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">p95 latency per hour</th>
              </tr>
            </thead>
            <tbody>
              {ENDPOINTS.map((endpoint) => (
                <tr key={endpoint.origin}>
                  <td class="url" data-label="Endpoint">
                    {endpoint.origin}
                  </td>
                  <td data-label="p95 latency per hour">
                    <Sparkline label={`${endpoint.origin}, p95 latency per hour`} values={endpoint.p95} unit="ms" />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root) render(<ChartsPage />, root);
