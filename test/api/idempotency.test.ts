import test from "ava";
import { adminAuth, createClient } from "../helpers/admin.js";
import { postPublish, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);

test("a repeated idempotency key answers what the first call answered, even after its subscription was deleted; each job id stays answerable", async (t) => {
  // Its retry is due in an hour: none is in flight when the subscription goes.
  const receiver = await Receiver.start(() => ({ status: 503, headers: { "retry-after": "3600" } }));
  t.teardown(() => receiver.close());
  const owner = await createClient(running.baseUrl, "Idempotent");
  const created = await postSubscription(running.baseUrl, { event: "Order.Shipped", url: receiver.url }, owner.auth);
  t.is(created.status, 200, created.text);
  const publish = () =>
    postPublish(
      running.baseUrl,
      { clientId: owner.id, event: "Order.Shipped", payload: { OrderId: "o-1" }, idempotencyKey: "ship-o-1" },
      adminAuth,
    );
  const first = await publish();
  t.is(first.status, 200, first.text);
  t.false(first.json.duplicate as boolean);
  const [jobId] = first.json.jobIds as string[];
  await receiver.waitFor(1);
  // The attempt is recorded once the answer is in; delete after that.
  const logged = () =>
    rest(running.baseUrl, "GET", `/api/webhookSubscription/${created.json.id}/notifications/${jobId}`, undefined, owner.auth);
  for (let read = await logged(); ((read.json.attempts as unknown[] | undefined) ?? []).length < 1; read = await logged()) {
    if (read.status !== 200) throw new Error(read.text);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  const deleted = await rest(running.baseUrl, "DELETE", `/api/webhookSubscription/${created.json.id}`, undefined, owner.auth);
  t.is(deleted.status, 200, deleted.text);
  const replay = await publish();
  t.is(replay.status, 200, replay.text);
  t.deepEqual(replay.json, { jobIds: [jobId], duplicate: true });

  const job = await rest(running.baseUrl, "GET", `/api/internal/jobs/${jobId}`, undefined, adminAuth);
  t.is(job.status, 200, job.text);
  t.is(job.json.clientId, owner.id);
  t.true(job.json.subscriptionDeleted as boolean);
  const notification = job.json.notification as { status: string; attempts: Array<{ error: string; statusCode: number }> };
  t.is(notification.status, "NOTIFICATION_STATUS_FAILED");
  t.is(notification.attempts[0]?.statusCode, 503, "the attempt made before the deletion");
  t.is(notification.attempts.at(-1)?.error, "subscription was deleted");
  t.is(notification.attempts.length, 2);

  t.is((await rest(running.baseUrl, "GET", `/api/internal/jobs/${jobId}`, undefined, owner.auth)).status, 401, "admins only");
  const unknown = await rest(running.baseUrl, "GET", "/api/internal/jobs/ntf_00000000000000000000000000000000", undefined, adminAuth);
  t.is(unknown.status, 404, unknown.text);
  t.regex(unknown.json.message as string, /not found/);
  t.is((await rest(running.baseUrl, "GET", "/api/internal/jobs/..%2Fetc", undefined, adminAuth)).status, 404);
});
