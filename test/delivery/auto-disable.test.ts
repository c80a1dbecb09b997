import test from "ava";
import { createClient } from "../helpers/admin.js";
import { postSample, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { rest, serviceOn } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

for (const target of storeTargets()) {
  test.serial(`${target.name}: a subscription that keeps failing is disabled, with the reason in its state`, async (t) => {
    const receiver = await Receiver.start(() => ({ status: 503 }));
    t.teardown(() => receiver.close());
    const { baseUrl } = await serviceOn(t, target, { AUTO_DISABLE_AFTER: "300ms", RETRY_SCHEDULE: "200ms,200ms,200ms" });
    const owner = await createClient(baseUrl, "Flaky");
    const created = await postSubscription(baseUrl, { event: "Order.Shipped", url: receiver.url }, owner.auth);
    const id = created.json.id as string;
    await postSample(baseUrl, { event: "Order.Shipped", url: receiver.url }, owner.auth);
    await receiver.waitFor(2);
    const failing = await rest(baseUrl, "GET", `/api/webhookSubscription/${id}`, undefined, owner.auth);
    t.truthy(failing.json.failingSince, "the failure streak is visible");

    let disabled = failing;
    for (let i = 0; i < 50 && disabled.json.enabled; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      disabled = await rest(baseUrl, "GET", `/api/webhookSubscription/${id}`, undefined, owner.auth);
    }
    t.false(disabled.json.enabled as boolean);
    t.regex(disabled.json.disabledReason as string, /disabled automatically: every delivery failed since/);
    t.truthy(disabled.json.disabledAt);

    // The owner fixes the endpoint and enables it again: the streak starts over.
    receiver.respond = () => ({ status: 200 });
    const enabled = await rest(baseUrl, "PATCH", `/api/webhookSubscription/${id}`, { enabled: true }, owner.auth);
    t.true(enabled.json.enabled as boolean);
    t.is(enabled.json.disabledReason, "");
    t.is(enabled.json.failingSince, undefined);
    const sample = await postSample(baseUrl, { event: "Order.Shipped", url: receiver.url }, owner.auth);
    t.is(sample.status, 200);
    // Retries of the first notification may still arrive around it: wait for the sample's own job.
    const delivered = await receiver.waitForJob(sample.json.jobId as string);
    t.is(delivered.headers["x-jobattempt"], "0");
  });
}
