import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import test from "ava";
import express from "express";
import { expressReceiver } from "../../packages/receiver/src/adapters/express.js";
import {
  DEFAULT_TOLERANCE_MS,
  InvalidSignatureError,
  MissingHeaderError,
  StaleTimestampError,
  type VerifiedNotification,
} from "../../packages/receiver/src/index.js";
import { DEFAULT_CATALOG } from "../../src/domain/default-catalog.js";
import { generateSigningKeyPair } from "../../src/domain/signature.js";
import { createClient } from "../helpers/admin.js";
import { type ReceivedRequest, Receiver } from "../helpers/receiver.js";
import { ADAPTERS, replay, startSdkReceiver } from "../helpers/sdk-receiver.js";
import { rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const BASE = "/api/webhookSubscription";

/** One real delivery, captured raw, and the key that signed it: replayed at every adapter. */
let capturing: Promise<{ delivery: ReceivedRequest; key: string }> | undefined;
function captured() {
  capturing ??= (async () => {
    const owner = await createClient(running.baseUrl, "Capture");
    const raw = await Receiver.start();
    try {
      const created = await rest(running.baseUrl, "POST", BASE, { event: "Payment.Failed", url: raw.url }, owner.auth);
      await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, { event: "Payment.Failed", url: raw.url }, owner.auth);
      const [delivery] = await raw.waitFor(1);
      return { delivery: delivery as ReceivedRequest, key: created.json.signatureKey as string };
    } finally {
      await raw.close();
    }
  })();
  return capturing;
}

for (const adapter of ADAPTERS) {
  test(`${adapter}: real signed deliveries of every catalog event are verified and handled once each`, async (t) => {
    const owner = await createClient(running.baseUrl, `${adapter} shop`);
    let keys: string[] = [];
    const receiver = await startSdkReceiver(adapter, { keys: () => keys });
    t.teardown(() => receiver.close());
    // The URL takes every catalog event, each through a subscription (and key) of its own: a sample
    // is only of an event its URL takes. keyIndex then tells which subscription's key verified.
    const subscriptions: string[] = [];
    for (const { name } of DEFAULT_CATALOG) {
      const created = await rest(running.baseUrl, "POST", BASE, { event: name, url: receiver.url }, owner.auth);
      t.is(created.status, 200, created.text);
      subscriptions.push(created.json.id as string);
      keys = [...keys, created.json.signatureKey as string];
    }

    const jobs = new Map<string, string>();
    for (const { name } of DEFAULT_CATALOG) {
      const trigger = { event: name, url: receiver.url };
      const sample = await rest(running.baseUrl, "POST", `${BASE}/triggerSampleEventNotification`, trigger, owner.auth);
      t.is(sample.status, 200, sample.text);
      jobs.set(sample.json.jobId as string, name);
    }
    await receiver.waitUntil(() => receiver.calls.length >= jobs.size, `${jobs.size} notifications`);

    t.deepEqual(receiver.errors, []);
    t.deepEqual(receiver.calls.map((call) => call.jobId).sort(), [...jobs.keys()].sort());
    t.is(receiver.calls.length, jobs.size, "each job once");
    for (const call of receiver.calls) {
      const definition = DEFAULT_CATALOG.find((entry) => entry.name === call.event);
      t.is(call.event, jobs.get(call.jobId) as string);
      t.deepEqual(call.payload, definition?.samplePayload, "the payload is the sample, without Event and Timestamp");
      t.like(call, { attempt: 0, keyIndex: DEFAULT_CATALOG.findIndex((entry) => entry.name === call.event) });
      t.true(Math.abs(call.timestamp.getTime() - Date.now()) < 60_000);
    }
    for (const id of subscriptions) {
      const delivered = await waitForDelivered(id, owner.auth, 1);
      t.true(
        delivered.every((notification) => notification.attemptCount === 1),
        "every 200 ended its job at the first attempt",
      );
    }

    if (adapter !== "http") {
      const other = await fetch(new URL("/json", receiver.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"a":1}',
      });
      t.deepEqual(await other.json(), { parsed: { a: 1 } }, "the app's other routes still parse JSON");
    }
  });

  test(`${adapter}: 50 concurrent replays of one real delivery run the handler once`, async (t) => {
    const { delivery, key } = await captured();
    let answered = 0;
    let othersAnswered: () => void = () => {};
    const gate = new Promise<void>((resolve, reject) => {
      othersAnswered = resolve;
      setTimeout(() => reject(new Error("the other 49 replays did not all answer within 20 s")), 20_000).unref();
    });
    // The handler holds its job until every duplicate has been answered, so all 49 arrive while it runs.
    const receiver = await startSdkReceiver(adapter, { keys: [key], onNotification: () => gate });
    t.teardown(() => receiver.close());

    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        replay(receiver.url, delivery).then((answer) => {
          if (++answered === 49) othersAnswered();
          return answer;
        }),
      ),
    );
    t.is(receiver.calls.length, 1);
    t.deepEqual(answers.map((answer) => answer.status).sort(), [200, ...Array.from({ length: 49 }, () => 409)]);
    t.is(answers.find((answer) => answer.status === 200)?.json.status, "processed");
    const later = await replay(receiver.url, delivery, { headers: { "x-jobattempt": "3" } });
    t.deepEqual(later, { status: 200, json: { status: "duplicate", jobId: delivery.headers["x-jobid"] } });
    t.is(receiver.calls.length, 1);
  });

  test(`${adapter}: a tampered body, a wrong key, a stale Timestamp and a missing header are refused with their 4xx`, async (t) => {
    const { delivery, key } = await captured();
    const wrong = await generateSigningKeyPair(2048);
    let keys = [key];
    let clockAhead = 0;
    const receiver = await startSdkReceiver(adapter, { keys: () => keys, now: () => Date.now() + clockAhead });
    t.teardown(() => receiver.close());

    const tampered = await replay(receiver.url, delivery, { body: delivery.body.replace("card_declined", "card_accepted") });
    keys = [wrong.publicKeyPem];
    const wrongKey = await replay(receiver.url, delivery);
    keys = [key];
    clockAhead = DEFAULT_TOLERANCE_MS + 60_000;
    const stale = await replay(receiver.url, delivery);
    clockAhead = 0;
    const missing = await replay(receiver.url, delivery, { headers: { "x-signature": undefined } });

    t.deepEqual(
      [tampered, wrongKey, stale, missing].map((answer) => [answer.status, answer.json.error]),
      [
        [401, "invalid_signature"],
        [401, "invalid_signature"],
        [400, "stale_timestamp"],
        [400, "missing_header"],
      ],
    );
    const types = [InvalidSignatureError, InvalidSignatureError, StaleTimestampError, MissingHeaderError];
    t.is(receiver.errors.length, types.length);
    receiver.errors.forEach(({ error, context }, index) => {
      t.true(error instanceof (types[index] as typeof InvalidSignatureError), String(error));
      t.is(context.stage, "verify");
    });
    t.is(receiver.calls.length, 0);
    t.is((await replay(receiver.url, delivery)).status, 200, "the untouched delivery still verifies");
  });
}

test("express: a body express.json() already parsed is reported as wiring, not verified; express.raw() works", async (t) => {
  const { delivery, key } = await captured();
  const calls: VerifiedNotification[] = [];
  const wiring: unknown[] = [];
  const app = express();
  app.post("/raw", express.raw({ type: "*/*" }), expressReceiver({ keys: [key], onNotification: (n) => calls.push(n) }));
  app.use(express.json());
  app.post("/parsed", expressReceiver({ keys: [key], onNotification: (n) => calls.push(n) }));
  app.use((error: unknown, _request: express.Request, response: express.Response, _next: express.NextFunction) => {
    wiring.push(error);
    response.status(500).json({ error: "wiring" });
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const parsed = await replay(`${base}/parsed`, delivery);
  t.is(parsed.status, 500);
  t.regex(String(wiring[0]), /TypeError: expressReceiver: the request body was already parsed/);
  t.is((await replay(`${base}/raw`, delivery)).status, 200);
  t.is(calls.length, 1);
});

async function waitForDelivered(subscriptionId: string, auth: Record<string, string>, count: number) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const log = await rest(running.baseUrl, "GET", `${BASE}/${subscriptionId}/notifications`, undefined, auth);
    const listed = (log.json.notifications ?? []) as Array<{ status: string; attemptCount: number }>;
    const delivered = listed.filter((notification) => notification.status === "NOTIFICATION_STATUS_DELIVERED");
    if (delivered.length >= count) return delivered;
    if (Date.now() > deadline) throw new Error(`${delivered.length} of ${count} notifications delivered: ${log.text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
