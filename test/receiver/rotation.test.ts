import test from "ava";
import { createClient } from "../helpers/admin.js";
import { startSdkReceiver } from "../helpers/sdk-receiver.js";
import { rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const BASE = "/api/webhookSubscription";

test("a key rotation mid-stream loses nothing: every delivery verifies with [old, new], none needs a retry", async (t) => {
  const owner = await createClient(running.baseUrl, "Rotating receiver");
  let keys: string[] = [];
  const receiver = await startSdkReceiver("http", { keys: () => keys });
  t.teardown(() => receiver.close());
  const created = await rest(running.baseUrl, "POST", BASE, { event: "Payment.Succeeded", url: receiver.url }, owner.auth);
  const id = created.json.id as string;
  const oldKey = created.json.signatureKey as string;
  keys = [oldKey];

  const phases = new Map<string, "before" | "during" | "after" | "dropped">();
  const trigger = async (phase: "before" | "during" | "after" | "dropped") => {
    const sample = { event: "Payment.Succeeded", url: receiver.url };
    const answer = await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, sample, owner.auth);
    t.is(answer.status, 200, answer.text);
    phases.set(answer.json.jobId as string, phase);
  };

  for (let i = 0; i < 5; i++) await trigger("before");
  const rotating = await rest(running.baseUrl, "POST", `${BASE}/${id}/rotateSignatureKey`, {}, owner.auth);
  const newKey = rotating.json.nextSignatureKey as string;
  keys = [oldKey, newKey];
  // Deliveries keep flowing while the rotation is confirmed: triggers do not wait for them.
  for (let i = 0; i < 10; i++) {
    await trigger("during");
    if (i === 4) t.is((await rest(running.baseUrl, "POST", `${BASE}/${id}/confirmSignatureKeyRotation`, {}, owner.auth)).status, 200);
  }
  for (let i = 0; i < 5; i++) await trigger("after");
  await receiver.waitUntil(() => receiver.calls.length >= phases.size, `${phases.size} deliveries`);

  // The old key is retired once nothing verifies with it any more.
  keys = [newKey];
  await trigger("dropped");
  await receiver.waitUntil(() => receiver.calls.length >= phases.size, "the delivery after the old key was dropped");

  t.deepEqual(receiver.errors, [], "no delivery was refused");
  t.is(receiver.calls.length, phases.size, "each job once");
  // Every job, in whatever order the deliveries arrived.
  t.deepEqual(receiver.calls.map((call) => call.jobId).sort(), [...phases.keys()].sort());
  const keyIndexes = (phase: string) => receiver.calls.filter((call) => phases.get(call.jobId) === phase).map((call) => call.keyIndex);
  t.deepEqual(keyIndexes("before"), [0, 0, 0, 0, 0], "signed by the old key");
  t.deepEqual(keyIndexes("after"), [1, 1, 1, 1, 1], "signed by the new key once confirmed");
  t.true(
    keyIndexes("during").every((index) => index === 0 || index === 1),
    "either key",
  );
  t.deepEqual(keyIndexes("dropped"), [0], "the new key alone");
  t.true(
    receiver.calls.every((call) => call.attempt === 0),
    "no delivery needed a retry",
  );
});
