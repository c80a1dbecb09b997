import test from "ava";
import { RelaySender } from "../../src/delivery/relay-sender.js";
import type { DeliveryActivity } from "../../src/domain/delivery-activity.js";
import { notificationRecord } from "../helpers/subscriptions.js";

const notification = notificationRecord({ body: '{"Event":"Order.Created"}', attemptCount: 1 });
const headers = { "X-Signature": "c2ln", "X-JobId": "ntf_1", "X-JobAttempt": "1" };

function sender(timeoutMs = 5_000) {
  const announced: DeliveryActivity[] = [];
  return { relay: new RelaySender({ timeoutMs, maxResponseBytes: 5, announce: (activity) => announced.push(activity) }), announced };
}

test("ANSWERED: the relay request is announced with the body and headers; the listener's answer is the attempt's result", async (t) => {
  const { relay, announced } = sender();
  const sent = relay.send({ notification, attempt: 1, headers, signal: new AbortController().signal });
  t.like(announced[0], { kind: "relay-request", jobId: "ntf_1", attempt: 1, clientId: "cli_1", body: notification.body });
  t.deepEqual(announced[0]?.headers, { "Content-Type": "application/json", ...headers });
  t.false(
    relay.settle({ subscriptionId: "sub_1", jobId: "ntf_1", attempt: 0, durationMs: 1, statusCode: 200 }),
    "another attempt waits nowhere",
  );
  t.true(
    relay.settle({ subscriptionId: "sub_1", jobId: "ntf_1", attempt: 1, durationMs: 7, statusCode: 503, responseBody: "busy for now" }),
  );
  t.deepEqual(await sent, { durationMs: 7, statusCode: 503, responseBody: "busy ", interrupted: false });
  t.is(relay.waiting, 0);
  t.false(relay.settle({ subscriptionId: "sub_1", jobId: "ntf_1", attempt: 1, durationMs: 7, statusCode: 200 }), "answered once");
});

test("an answer without a status carries the listener's error", async (t) => {
  const { relay } = sender();
  const sent = relay.send({ notification, attempt: 1, headers, signal: new AbortController().signal });
  relay.settle({
    subscriptionId: "sub_1",
    jobId: "ntf_1",
    attempt: 1,
    durationMs: 3,
    error: "ECONNREFUSED (forwarding to http://localhost:3000/hooks)",
  });
  t.like(await sent, { error: "ECONNREFUSED (forwarding to http://localhost:3000/hooks)", interrupted: false, statusCode: undefined });
});

test("TIMED OUT: nobody answers within the timeout", async (t) => {
  const { relay } = sender(20);
  const result = await relay.send({ notification, attempt: 1, headers, signal: new AbortController().signal });
  t.like(result, { error: "no listener answered within 20 ms", interrupted: false });
  t.is(relay.waiting, 0);
});

test("INTERRUPTED: a shutdown ends the wait without counting the attempt", async (t) => {
  const { relay } = sender();
  const shutdown = new AbortController();
  const sent = relay.send({ notification, attempt: 1, headers, signal: shutdown.signal });
  shutdown.abort();
  t.like(await sent, { interrupted: true });
  t.is(relay.waiting, 0);
  const already = await relay.send({ notification, attempt: 2, headers, signal: shutdown.signal });
  t.like(already, { interrupted: true });
});
