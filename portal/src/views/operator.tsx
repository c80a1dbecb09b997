import { Clients } from "./clients.js";
import { Dashboard } from "./dashboard.js";
import { EventTypes } from "./event-types.js";

export function OperatorView() {
  return (
    <>
      <h1>Operator</h1>
      <Dashboard />
      <Clients />
      <EventTypes />
    </>
  );
}
