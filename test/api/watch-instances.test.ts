import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import test from "ava";
import { DeliveryActivityKind, DeliveryService } from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, anotherInstance, rest, serviceOn } from "../helpers/service.js";
import { notOnMongo, postgresOnly } from "../helpers/stores.js";
import { describe, ofJob, watchOver } from "../helpers/watch.js";

const postgres = postgresOnly(test, "watchers across instances");
notOnMongo(test, "a watcher on instance B sees what happens on instance A");

if (postgres) {
  test("a watcher on instance B sees what happens on instance A (PostgreSQL LISTEN/NOTIFY)", async (t) => {
    const receiver = await Receiver.start();
    t.teardown(() => receiver.close());
    const a = await serviceOn(t, postgres);
    const b = await anotherInstance(t, a);
    const created = await rest(a.baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Created", url: receiver.url });
    t.is(created.status, 200, created.text);
    const onB = await watchOver(createConnectTransport({ baseUrl: b.baseUrl, httpVersion: "1.1" }), API_KEY);
    try {
      // Accepted on A: only A's observer hears it, so B's watcher can have it only from A.
      const triggered = await rest(a.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
        event: "Order.Created",
        url: receiver.url,
      });
      const jobId = String(triggered.json.jobId);
      const activities = await onB.until((all) => ofJob(all, jobId).some((activity) => activity.kind === DeliveryActivityKind.DELIVERED));
      const seen = describe(ofJob(activities, jobId));
      t.deepEqual([...seen].sort(), ["ACCEPTED", "ATTEMPT_FINISHED 0 200", "ATTEMPT_STARTED 0", "DELIVERED"], seen.join(", "));
      // One instance's activities arrive in the order it made them. Whichever instance ran the attempt, its start,
      // end and outcome come in order; A's "accepted" may arrive after B's start when B ran it (docs/api.md).
      t.deepEqual(
        seen.filter((line) => line !== "ACCEPTED"),
        ["ATTEMPT_STARTED 0", "ATTEMPT_FINISHED 0 200", "DELIVERED"],
        seen.join(", "),
      );
    } finally {
      onB.close();
    }
  });

  test("a relay delivery made on instance A reaches a listener on instance B, and B's answer is recorded (PostgreSQL)", async (t) => {
    const a = await serviceOn(t, postgres);
    const b = await anotherInstance(t, a);
    const created = await rest(a.baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Created", url: "", relay: true });
    t.is(created.status, 200, created.text);
    const relayId = String(created.json.id);
    const transport = createConnectTransport({ baseUrl: b.baseUrl, httpVersion: "1.1" });
    const onB = await watchOver(transport, API_KEY, { relaySubscriptionIds: [relayId] });
    try {
      const triggered = await rest(a.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
        event: "Order.Created",
        url: `relay:${relayId}`,
      });
      const jobId = String(triggered.json.jobId);
      const [request] = ofJob(
        await onB.until((all) => ofJob(all, jobId).some((activity) => activity.kind === DeliveryActivityKind.RELAY_REQUEST)),
        jobId,
      ).filter((activity) => activity.kind === DeliveryActivityKind.RELAY_REQUEST);
      t.like(JSON.parse(request?.body ?? "{}"), { Event: "Order.Created" });
      t.is(request?.headers["X-JobId"], jobId);
      const answer = await createClient(DeliveryService, transport).reportRelayResult(
        { subscriptionId: relayId, jobId, attempt: 0, statusCode: 204, durationMs: 3 },
        { headers: { authorization: `Bearer ${API_KEY}` } },
      );
      t.true(answer.accepted);
      await onB.until((all) => ofJob(all, jobId).some((activity) => activity.kind === DeliveryActivityKind.DELIVERED));
      const log = await rest(b.baseUrl, "GET", `/api/webhookSubscription/${relayId}/notifications/${jobId}`);
      t.like((log.json.attempts as unknown[])[0], { attempt: 0, statusCode: 204, succeeded: true });
    } finally {
      onB.close();
    }
  });
}
