import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import test from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { startService } from "../../src/service.js";
import { adminAuth, createClient } from "../helpers/admin.js";
import { postPublish, postSample, postSubscription } from "../helpers/calls.js";
import { eventually } from "../helpers/eventually.js";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, FAST_TEST_ENV, rest, startTestService, type TestService } from "../helpers/service.js";
import { type StoreTarget, sharedTargets, storeTargets, testOn } from "../helpers/stores.js";
import { watchOver } from "../helpers/watch.js";

const CLIENTS = "/api/internal/clients";
/** Retries a second apart: an operator's call made right after a failed attempt lands before its retry. */
const ENV = { RETRY_SCHEDULE: "1s,1s,1s,1s,1s" };

/** How a watch ended: the Connect error it ended with (it must end within `timeoutMs`). */
async function endOf(watching: Awaited<ReturnType<typeof watchOver>>, timeoutMs = 10_000): Promise<ConnectError> {
  const error = await watching
    .until(() => false, timeoutMs)
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  if (!(error instanceof ConnectError)) throw new Error(`the stream did not end with a Connect error: ${String(error)}`);
  return error;
}

const TRANSPORTS: Record<string, (baseUrl: string) => Transport> = {
  Connect: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  gRPC: (baseUrl) => createGrpcTransport({ baseUrl }),
  "gRPC-Web": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
};

/** Events without a payload schema, so that a test publishes `{}`. */
const EVENTS = ["Lifecycle.Happened", "Lifecycle.Failed"] as const;

/** The real service on this target, for the test's own database, with EVENTS registered; stopped with the test. */
async function serviceOn(t: { teardown(fn: () => Promise<void>): void }, target: StoreTarget): Promise<TestService> {
  const store = await target.create();
  const running = await startTestService({ ...store.env, ...ENV });
  t.teardown(async () => {
    await running.service.stop();
    await store.cleanup();
  });
  for (const name of EVENTS) {
    const registered = await rest(running.baseUrl, "POST", "/api/internal/eventTypes", { name, description: "a test event" }, adminAuth);
    if (registered.status !== 200) throw new Error(registered.text);
  }
  return running;
}

for (const target of storeTargets()) {
  const on = testOn(test, target);

  on(
    `${target.name}: a client's keys are listed without secrets, the bootstrap key's id is logged, and revoking ends its streams`,
    async (t) => {
      const store = await target.create();
      const lines: string[] = [];
      const log = pino(
        { level: "info" },
        new Writable({
          write(chunk, _encoding, done) {
            lines.push(String(chunk));
            done();
          },
        }),
      );
      const service = await startService(loadConfig({ ...FAST_TEST_ENV, ...ENV, ...store.env }), log);
      t.teardown(async () => {
        await service.stop();
        await store.cleanup();
      });
      const base = `http://127.0.0.1:${service.port}`;
      const bootstrapLine = lines.map((line) => JSON.parse(line) as { keyId?: string; clientId?: string }).find((line) => line.keyId);
      t.truthy(bootstrapLine?.keyId, "the bootstrap key's id is logged at start");

      const listed = await rest(base, "GET", `${CLIENTS}/${bootstrapLine?.clientId}/apiKeys`, undefined, adminAuth);
      t.is(listed.status, 200, listed.text);
      const [bootstrapKey] = listed.json.apiKeys as Array<Record<string, unknown>>;
      t.like(bootstrapKey, { id: bootstrapLine?.keyId, name: "bootstrap" });
      t.falsy(bootstrapKey?.key, "no secret in a listing");

      t.is((await rest(base, "GET", "/api/webhookSubscription/events")).status, 200);
      await eventually("the bootstrap key's last use", async () => {
        const keys = (await rest(base, "GET", `${CLIENTS}/${bootstrapLine?.clientId}/apiKeys`, undefined, adminAuth)).json.apiKeys;
        return typeof (keys as Array<Record<string, unknown>>)[0]?.lastUsedAt === "string";
      });

      const client = await createClient(base, "Keys");
      const issued = await rest(base, "POST", `${CLIENTS}/${client.id}/apiKeys`, { name: "ci pipeline" }, adminAuth);
      t.is(issued.status, 200, issued.text);
      const second = issued.json.apiKey as { id: string; key: string; name: string };
      t.is(second.name, "ci pipeline");
      const keys = (await rest(base, "GET", `${CLIENTS}/${client.id}/apiKeys`, undefined, adminAuth)).json.apiKeys as Array<
        Record<string, unknown>
      >;
      t.deepEqual(
        keys.map((key) => [key.name ?? "", Boolean(key.key), "revokedAt" in key]),
        [
          ["", false, false],
          ["ci pipeline", false, false],
        ],
      );

      const watches = await Promise.all(Object.values(TRANSPORTS).map((transport) => watchOver(transport(base), second.key)));
      t.is((await rest(base, "POST", `${CLIENTS}/${client.id}/apiKeys/${second.id}/revoke`, {}, adminAuth)).status, 200);
      for (const [index, protocol] of Object.keys(TRANSPORTS).entries()) {
        const ended = await endOf(watches[index] as Awaited<ReturnType<typeof watchOver>>);
        t.is(ended.code, Code.Unauthenticated, `${protocol}: ${ended.message}`);
        t.regex(ended.message, /revoked/);
      }
      const after = (await rest(base, "GET", `${CLIENTS}/${client.id}/apiKeys`, undefined, adminAuth)).json.apiKeys as Array<
        Record<string, unknown>
      >;
      t.is(typeof after[1]?.revokedAt, "string");
      const unknown = await rest(base, "GET", `${CLIENTS}/cli_0123456789abcdef0123456789abcdef/apiKeys`, undefined, adminAuth);
      t.is(unknown.status, 404, unknown.text);
    },
  );

  on(
    `${target.name}: a disabled client is refused with its reason, its deliveries wait unattempted, and go out once enabled`,
    async (t) => {
      const { baseUrl: base } = await serviceOn(t, target);
      let answers = 0;
      const receiver = await Receiver.start(() => ({ status: answers++ === 0 ? 500 : 200 }));
      t.teardown(() => receiver.close());
      const client = await createClient(base, "To disable");
      t.is((await postSubscription(base, { event: "Lifecycle.Happened", url: receiver.url }, client.auth)).status, 200);
      const watching = await watchOver(TRANSPORTS.Connect?.(base) as Transport, client.key);
      const published = await postPublish(base, { clientId: client.id, event: "Lifecycle.Happened", payload: {} }, adminAuth);
      t.is(published.status, 200, published.text);
      const [jobId] = published.json.jobIds as string[];
      await receiver.waitFor(1);

      const disabled = await rest(base, "POST", `${CLIENTS}/${client.id}/disable`, { reason: "unpaid invoice" }, adminAuth);
      t.is(disabled.status, 200, disabled.text);
      t.like(disabled.json, { id: client.id, disabledReason: "unpaid invoice" });
      const ended = await endOf(watching);
      t.is(ended.code, Code.PermissionDenied, ended.message);

      const refused = await rest(base, "GET", "/api/webhookSubscription", undefined, client.auth);
      t.is(refused.status, 403, refused.text);
      t.is(refused.json.code, "permission_denied");
      t.regex(String(refused.json.message), /disabled \(unpaid invoice\)/);
      const publish = await postPublish(base, { clientId: client.id, event: "Lifecycle.Happened", payload: {} }, adminAuth);
      t.is(publish.status, 400, publish.text);
      t.is(publish.json.code, "failed_precondition");
      t.regex(String(publish.json.message), /disabled/);
      const listed = (await rest(base, "GET", CLIENTS, undefined, adminAuth)).json.clients as Array<Record<string, unknown>>;
      t.like(
        listed.find((c) => c.id === client.id),
        { disabledReason: "unpaid invoice" },
      );

      // Its retry fell due a second after the first attempt: three times that later, it is still unattempted.
      await sleep(3_000);
      t.is(receiver.requests.length, 1, "no attempt while disabled");
      const job = await rest(base, "GET", `/api/internal/jobs/${jobId}`, undefined, adminAuth);
      t.like(job.json.notification, { status: "NOTIFICATION_STATUS_PENDING", attemptCount: 1 });

      const enabled = await rest(base, "POST", `${CLIENTS}/${client.id}/enable`, {}, adminAuth);
      t.is(enabled.status, 200, enabled.text);
      t.falsy(enabled.json.disabledReason);
      t.is((await rest(base, "GET", "/api/webhookSubscription", undefined, client.auth)).status, 200);
      const retried = await receiver.waitFor(2, 30_000);
      t.is(retried[1]?.headers["x-jobattempt"], "1", "the wait counted no attempt");
      await eventually(
        "delivery after enabling",
        async () =>
          ((await rest(base, "GET", `/api/internal/jobs/${jobId}`, undefined, adminAuth)).json.notification as { status?: string })
            ?.status === "NOTIFICATION_STATUS_DELIVERED",
      );
    },
  );

  on(`${target.name}: a deleted client's data goes, its pending job ends unattempted, and calls about it answer not_found`, async (t) => {
    const { baseUrl: base } = await serviceOn(t, target);
    const ok = await Receiver.start();
    const failing = await Receiver.start(() => ({ status: 500 }));
    t.teardown(async () => {
      await ok.close();
      await failing.close();
    });
    // A retention of its own of 2 s: the purge then runs every second.
    const created = await rest(base, "POST", CLIENTS, { name: "To delete", retention: "2s" }, adminAuth);
    t.is(created.status, 200, created.text);
    const id = (created.json.client as { id: string }).id;
    const auth = { authorization: `Bearer ${(created.json.apiKey as { key: string }).key}` };
    t.is((await postSubscription(base, { event: "Lifecycle.Happened", url: ok.url }, auth)).status, 200);
    t.is((await postSubscription(base, { event: "Lifecycle.Failed", url: failing.url }, auth)).status, 200);
    const publish = (event: string) => postPublish(base, { clientId: id, event, payload: {} }, adminAuth);
    const [delivered] = (await publish("Lifecycle.Happened")).json.jobIds as string[];
    const [pending] = (await publish("Lifecycle.Failed")).json.jobIds as string[];
    await ok.waitFor(1);
    await failing.waitFor(1);

    const deleted = await rest(base, "DELETE", `${CLIENTS}/${id}`, undefined, adminAuth);
    t.is(deleted.status, 200, deleted.text);
    const attemptsAtDeletion = failing.requests.length;
    t.is((await rest(base, "GET", "/api/webhookSubscription", undefined, auth)).status, 401, "its keys are gone");
    for (const [method, path, body] of [
      ["GET", `${CLIENTS}/${id}/apiKeys`, undefined],
      ["POST", `${CLIENTS}/${id}/apiKeys`, {}],
      ["PATCH", `${CLIENTS}/${id}`, { maxSubscriptions: 3 }],
      ["POST", `${CLIENTS}/${id}/disable`, {}],
      ["POST", `${CLIENTS}/${id}/enable`, {}],
      ["DELETE", `${CLIENTS}/${id}`, undefined],
    ] as const) {
      const answer = await rest(base, method, path, body, adminAuth);
      t.is(answer.status, 404, `${method} ${path}: ${answer.text}`);
    }
    const published = await publish("Lifecycle.Happened");
    t.is(published.status, 404, published.text);
    t.is(published.json.code, "not_found");
    const listed = (await rest(base, "GET", CLIENTS, undefined, adminAuth)).json.clients as Array<{ id: string }>;
    t.false(listed.some((c) => c.id === id));

    for (const jobId of [delivered, pending]) {
      await eventually(
        `job ${jobId} purged`,
        async () => (await rest(base, "GET", `/api/internal/jobs/${jobId}`, undefined, adminAuth)).status === 404,
      );
    }
    t.true(failing.requests.length <= attemptsAtDeletion + 1, "no attempt after the deletion, beyond one under way");
  });
}

for (const target of sharedTargets(test, "revoking on one instance ends the key's stream on another")) {
  test(`${target.name}: revoking on one instance ends the key's stream on another`, async (t) => {
    const store = await target.create();
    let a: TestService | undefined;
    let b: TestService | undefined;
    t.teardown(async () => {
      await a?.service.stop();
      await b?.service.stop();
      await store.cleanup();
    });
    a = await startTestService({ ...store.env, ...ENV });
    b = await startTestService({ ...store.env, ...ENV });
    const client = await createClient(a.baseUrl, "Two instances");
    const keys = (await rest(a.baseUrl, "GET", `${CLIENTS}/${client.id}/apiKeys`, undefined, adminAuth)).json.apiKeys as Array<{
      id: string;
    }>;
    const onB = await watchOver(createGrpcTransport({ baseUrl: b.baseUrl }), client.key);
    const stillOpen = await watchOver(createGrpcTransport({ baseUrl: b.baseUrl }), API_KEY);
    t.is((await rest(a.baseUrl, "POST", `${CLIENTS}/${client.id}/apiKeys/${keys[0]?.id}/revoke`, {}, adminAuth)).status, 200);
    const ended = await endOf(onB);
    t.is(ended.code, Code.Unauthenticated, ended.message);
    // Another key's stream on B goes on: it still hears what happens.
    const receiver = await Receiver.start();
    t.teardown(() => receiver.close());
    t.is((await postSubscription(a.baseUrl, { event: "Order.Created", url: receiver.url })).status, 200);
    const sample = await postSample(b.baseUrl, {
      event: "Order.Created",
      url: receiver.url,
    });
    await stillOpen.until((activities) => activities.some((activity) => activity.jobId === sample.json.jobId));
    stillOpen.close();
  });
}
