import { Clients } from "./clients.js";
import { Dashboard } from "./dashboard.js";
import { EventTypes } from "./event-types.js";
import { OperatorStats } from "./operator-stats.js";

export function OperatorView() {
  return (
    <>
      <h1>Operator</h1>
      <OperatorStats />
      <Dashboard />
      <Clients />
      <EventTypes />
    </>
  );
}
