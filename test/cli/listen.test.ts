import test from "ava";
import { verifyBody } from "../../src/domain/signature.js";
import { linesOf, spawnCli } from "../helpers/cli.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);

interface Attempt {
  attempt: number;
  statusCode: number;
  responseBody: string;
  succeeded: boolean;
}

/** The notification once it is no longer pending, as the delivery log shows it. */
async function finished(subscriptionId: string, jobId: string, receiver: Receiver): Promise<{ status: string; attempts: Attempt[] }> {
  for (;;) {
    const answer = await rest(running.baseUrl, "GET", `/api/webhookSubscription/${subscriptionId}/notifications/${jobId}`);
    if (answer.json.status !== "NOTIFICATION_STATUS_PENDING") return answer.json as unknown as { status: string; attempts: Attempt[] };
    // The next attempt reaches the receiver before it is recorded; past the last one, poll at the retry pace.
    await receiver.waitFor(receiver.requests.length + 1, 200).catch(() => {});
  }
}

test("listen forwards deliveries to a local receiver, signed with the relay's key; the log records the local answers, retries included", async (t) => {
  let failuresLeft = 0;
  const receiver = await Receiver.start(() => (failuresLeft-- > 0 ? { status: 500, body: "not yet" } : { status: 200, body: "ok" }));
  const listen = spawnCli(["--json", "listen", "--forward-to", receiver.url, "--events", "Order.Created"], {
    WEBHOOKS_URL: running.baseUrl,
    WEBHOOKS_API_KEY: API_KEY,
  });
  const exited = new Promise<number | null>((resolve) => listen.once("close", resolve));
  try {
    const lines = linesOf(listen)[Symbol.asyncIterator]();
    const first = await lines.next();
    const started = JSON.parse(String(first.value)) as {
      subscriptions: { id: string; url: string; event: string; signatureKey: string }[];
    };
    const [relay] = started.subscriptions;
    if (!relay) throw new Error("no relay subscription printed");
    t.is(relay.url, `relay:${relay.id}`);
    t.regex(relay.signatureKey, /BEGIN PUBLIC KEY/);

    // A sample to the relay: no outbound request from the service, yet the local receiver gets it.
    const sample = await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Order.Created",
      url: relay.url,
    });
    const jobId = String(sample.json.jobId);
    const request = await receiver.waitForJob(jobId);
    t.true(
      verifyBody(request.body, String(request.headers["x-signature"]), relay.signatureKey),
      "X-Signature verifies with the printed key",
    );
    t.is(request.headers["x-jobattempt"], "0");
    t.is(request.headers["content-type"], "application/json");
    t.like(JSON.parse(request.body), { Event: "Order.Created" });
    const delivered = await finished(relay.id, jobId, receiver);
    t.is(delivered.status, "NOTIFICATION_STATUS_DELIVERED");
    t.like(delivered.attempts[0], { attempt: 0, statusCode: 200, responseBody: "ok", succeeded: true });
    const report = JSON.parse(String((await lines.next()).value)) as { jobId: string; statusCode: number; recorded: boolean };
    t.like(report, { jobId, statusCode: 200, recorded: true });

    // The local receiver fails twice: two failed attempts, retried on schedule, then delivered.
    failuresLeft = 2;
    const retried = await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Order.Created",
      url: relay.url,
    });
    const retriedId = String(retried.json.jobId);
    const log = await finished(relay.id, retriedId, receiver);
    t.is(log.status, "NOTIFICATION_STATUS_DELIVERED");
    t.deepEqual(
      log.attempts.map((attempt) => [attempt.attempt, attempt.statusCode, attempt.responseBody]),
      [
        [0, 500, "not yet"],
        [1, 500, "not yet"],
        [2, 200, "ok"],
      ],
    );
    const forwarded = receiver.requests.filter((each) => each.headers["x-jobid"] === retriedId);
    t.deepEqual(
      forwarded.map((each) => each.headers["x-jobattempt"]),
      ["0", "1", "2"],
    );
    for (const each of forwarded) t.true(verifyBody(each.body, String(each.headers["x-signature"]), relay.signatureKey));

    listen.kill("SIGINT");
    t.is(await exited, 0);
    const gone = await rest(running.baseUrl, "GET", `/api/webhookSubscription/${relay.id}`);
    t.is(gone.status, 404, "the temporary relay subscription is removed on exit");
  } finally {
    listen.kill("SIGKILL");
    await receiver.close();
  }
});

test("a relay attempt nobody listens to fails with a clear error and is retried", async (t) => {
  const created = await rest(running.baseUrl, "POST", "/api/webhookSubscription", { event: "Order.Shipped", url: "", relay: true });
  t.is(created.status, 200, created.text);
  const url = String(created.json.url);
  t.is(url, `relay:${created.json.id}`);
  const sample = await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
    event: "Order.Shipped",
    url,
  });
  const jobId = String(sample.json.jobId);
  let attempts: { error: string }[] = [];
  let status = "";
  // DELIVERY_TIMEOUT_MS is 2 s in tests: the first attempt ends after it. Polled: no event tells the test.
  for (const deadline = Date.now() + 20_000; attempts.length === 0 && Date.now() < deadline; ) {
    const answer = await rest(running.baseUrl, "GET", `/api/webhookSubscription/${created.json.id}/notifications/${jobId}`);
    attempts = (answer.json.attempts as { error: string }[]) ?? [];
    status = String(answer.json.status);
    if (attempts.length === 0) await new Promise<void>((resolve) => setTimeout(resolve, 250));
  }
  t.regex(attempts[0]?.error ?? "", /no listener answered within 2000 ms/);
  t.is(status, "NOTIFICATION_STATUS_PENDING", "a retry follows");
  const withUrl = await rest(running.baseUrl, "POST", "/api/webhookSubscription", {
    event: "Order.Shipped",
    url: "https://example.com/x",
    relay: true,
  });
  t.is(withUrl.status, 400);
  const temporaryWithUrl = await rest(running.baseUrl, "POST", "/api/webhookSubscription", {
    event: "Order.Shipped",
    url: "https://example.com/x",
    temporary: true,
  });
  t.is(temporaryWithUrl.status, 400);
  t.regex(String(temporaryWithUrl.json.message), /only a relay subscription can be temporary/);
  const foreign = await rest(running.baseUrl, "POST", "/webhooks.v1.DeliveryService/ReportRelayResult", {
    subscriptionId: "sub_doesnotexist",
    jobId,
    attempt: 0,
    statusCode: 200,
  });
  t.is(foreign.status, 404);
});
