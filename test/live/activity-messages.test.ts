import test from "ava";
import type { DeliveryActivity } from "../../src/domain/delivery-activity.js";
import { decodeActivities, encodeActivities, MAX_MESSAGE_BYTES } from "../../src/live/activity-messages.js";

const activity = (jobId: string, error?: string): DeliveryActivity => ({
  kind: "attempt-finished",
  at: new Date("2026-11-23T01:00:00.123Z"),
  clientId: "cli_a",
  subscriptionId: "sub_a",
  event: "Order.Created",
  jobId,
  attempt: 1,
  statusCode: 500,
  durationMs: 12,
  succeeded: false,
  status: "pending",
  ...(error ? { error } : {}),
});

test("activities survive a message round trip, dates included", (t) => {
  const activities = [activity("ntf_1"), activity("ntf_2", "ECONNREFUSED")];
  const messages = encodeActivities("instance-a", activities);
  t.is(messages.length, 1);
  t.deepEqual(decodeActivities(messages[0] as string), { source: "instance-a", activities });
});

test("many activities split into messages each under the NOTIFY limit, none lost", (t) => {
  const activities = Array.from({ length: 200 }, (_, index) => activity(`ntf_${index}`, "x".repeat(300)));
  const messages = encodeActivities("instance-a", activities);
  t.true(messages.length > 1);
  for (const message of messages) t.true(Buffer.byteLength(message) < MAX_MESSAGE_BYTES);
  const decoded = messages.flatMap((message) => decodeActivities(message)?.activities ?? []);
  t.deepEqual(
    decoded.map((each) => each.jobId),
    activities.map((each) => each.jobId),
  );
});

test("an activity too big for any message is dropped, its neighbours kept", (t) => {
  const messages = encodeActivities("a", [activity("small"), activity("huge", "y".repeat(400)), activity("after")], 400);
  t.deepEqual(
    messages.flatMap((message) => decodeActivities(message)?.activities.map((each) => each.jobId) ?? []),
    ["small", "after"],
  );
});

test("a message that is not ours decodes to undefined", (t) => {
  t.is(decodeActivities("not json"), undefined);
  t.is(decodeActivities('{"s":1}'), undefined);
  t.is(decodeActivities('{"hello":"world"}'), undefined);
});
