import test from "ava";
import { createClient, publishEvent, registerEventType } from "../helpers/admin.js";
import { postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { serviceOn } from "../helpers/service.js";
import { storeTargets, testOn } from "../helpers/stores.js";

/** A poll far longer than the retries: only being told when they fall due makes them run on time. */
const SLOW_POLL = { SCHEDULER_POLL_MS: "60000", RETRY_SCHEDULE: "300ms,300ms,300ms,300ms,300ms", RETRY_JITTER: "0" };

for (const target of storeTargets()) {
  testOn(test, target)(`${target.name}: each retry is attempted as it falls due, not at the next poll`, async (t) => {
    // Three failures, then a success: four retries' worth of waiting.
    const receiver = await Receiver.start((request) => ({ status: receiver.requests.indexOf(request) < 3 ? 500 : 200 }));
    t.teardown(() => receiver.close());
    const { baseUrl } = await serviceOn(t, target, SLOW_POLL);
    const owner = await createClient(baseUrl, "Retried");
    await registerEventType(baseUrl, "Retry.Timed");
    const created = await postSubscription(baseUrl, { event: "Retry.Timed", url: receiver.url }, owner.auth);
    t.is(created.status, 200, created.text);

    const [jobId] = await publishEvent(baseUrl, owner.id, "Retry.Timed", { n: 1 });
    const attempts = await receiver.waitFor(4, 30_000);
    t.deepEqual(
      attempts.map((request) => [request.headers["x-jobid"], request.headers["x-jobattempt"], request.status]),
      [
        [jobId, "0", 500],
        [jobId, "1", 500],
        [jobId, "2", 500],
        [jobId, "3", 200],
      ],
    );
    // Each retry was due 300 ms after the attempt before it; the poll (60 s) would have run it a minute late.
    for (let i = 1; i < attempts.length; i++) {
      const gapMs = (attempts[i]?.at ?? 0) - (attempts[i - 1]?.at ?? 0);
      t.true(gapMs >= 300 && gapMs < 20_000, `retry ${i} came ${gapMs} ms after the attempt before`);
    }
  });
}
