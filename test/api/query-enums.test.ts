import test from "ava";
import { Receiver } from "../helpers/receiver.js";
import { rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const BASE = "/api/webhookSubscription";

/** A subscription with one delivered notification: its id and the notification's. */
async function deliveredNotification(): Promise<{ subscriptionId: string; jobId: string }> {
  const receiver = await Receiver.start();
  try {
    const created = await rest(running.baseUrl, "POST", BASE, { event: "Order.Created", url: receiver.url });
    const subscriptionId = created.json.id as string;
    const sample = await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, {
      event: "Order.Created",
      url: receiver.url,
    });
    const jobId = sample.json.jobId as string;
    await receiver.waitForJob(jobId);
    // The attempt is recorded just after the receiver answers.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const detail = await rest(running.baseUrl, "GET", `${BASE}/${subscriptionId}/notifications/${jobId}`);
      if (detail.json.status === "NOTIFICATION_STATUS_DELIVERED") return { subscriptionId, jobId };
      if (Date.now() > deadline) throw new Error(`notification still ${detail.json.status}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    await receiver.close();
  }
}

test("REST: an enum query parameter takes the short name, any case, the full name or the number", async (t) => {
  const { subscriptionId, jobId } = await deliveredNotification();
  const listed = async (status: string) => {
    const response = await rest(running.baseUrl, "GET", `${BASE}/${subscriptionId}/notifications?status=${status}`);
    t.is(response.status, 200, `${status}: ${response.text}`);
    return (response.json.notifications as Array<{ id: string }>).map((n) => n.id);
  };
  for (const status of ["DELIVERED", "delivered", "Delivered", "NOTIFICATION_STATUS_DELIVERED", "notification_status_delivered", "2"]) {
    t.deepEqual(await listed(status), [jobId], status);
  }
  for (const status of ["FAILED", "PENDING", "NOTIFICATION_STATUS_FAILED", "3"]) t.deepEqual(await listed(status), [], status);
});

test("REST: an unknown enum name is 400 listing the names", async (t) => {
  const response = await rest(running.baseUrl, "GET", `${BASE}/sub_00000000000000000000000000000000/notifications?status=BROKEN`);
  t.is(response.status, 400, response.text);
  t.like(response.json, {
    code: "invalid_argument",
    message: "status must be one of UNSPECIFIED, PENDING, DELIVERED, FAILED (or their full names, e.g. NOTIFICATION_STATUS_FAILED)",
  });
});
