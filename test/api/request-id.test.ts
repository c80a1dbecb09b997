import { Writable } from "node:stream";
import test from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { startService } from "../../src/service.js";
import { createClient } from "../helpers/admin.js";
import { postSample, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

type Line = Record<string, unknown>;

test("every API call's log line carries its request id and client id; every attempt's its job, attempt and subscription", async (t) => {
  const store = await storeTargets()[0]?.create();
  if (!store) return t.fail("no store");
  const lines: Line[] = [];
  const waiters: Array<() => void> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString("utf8").split("\n")) if (text) lines.push(JSON.parse(text) as Line);
      for (const wake of waiters.splice(0)) wake();
      done();
    },
  });
  const service = await startService(loadConfig({ ...FAST_TEST_ENV, ...store.env }), pino({ level: "info" }, sink));
  const baseUrl = `http://127.0.0.1:${service.port}`;
  const receiver = await Receiver.start();
  t.teardown(async () => {
    await service.stop();
    await receiver.close();
    await store.cleanup();
  });
  /** The first log line that `match`es, once written (within 20 s). */
  const lineWhere = async (match: (line: Line) => boolean): Promise<Line> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const found = lines.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error("no such log line");
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 500);
      });
    }
  };

  const client = await createClient(baseUrl, "logged");
  const given = await fetch(`${baseUrl}/api/webhookSubscription/events`, {
    headers: { authorization: `Bearer ${client.key}`, "x-request-id": "req-from-caller.42" },
  });
  t.is(given.status, 200);
  t.is(given.headers.get("x-request-id"), "req-from-caller.42", "the caller's id comes back");
  const logged = await lineWhere((line) => line.requestId === "req-from-caller.42");
  t.like(logged, { msg: "rpc", rpc: "webhooks.v1.SubscriptionService/ListEvents", code: "ok", clientId: client.id });

  const generated = await fetch(`${baseUrl}/api/webhookSubscription/events`, {
    headers: { authorization: `Bearer ${client.key}`, "x-request-id": "spaces; and {braces} are not kept" },
  });
  const id = generated.headers.get("x-request-id") ?? "";
  t.regex(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "an unacceptable id is replaced by a new one");
  t.like(await lineWhere((line) => line.requestId === id), { msg: "rpc", clientId: client.id });

  const refused = await fetch(`${baseUrl}/api/webhookSubscription/events`, { headers: { authorization: "Bearer not-a-key-0123456789" } });
  t.is(refused.status, 401);
  const refusedId = refused.headers.get("x-request-id");
  t.truthy(refusedId, "errors carry the id too");
  const refusedLine = await lineWhere((line) => line.requestId === refusedId);
  t.like(refusedLine, { code: "Unauthenticated" });
  t.false("clientId" in refusedLine, "no client authenticated");

  const created = await postSubscription(baseUrl, { event: "Order.Created", url: receiver.url }, client.auth);
  const subscriptionId = created.json.id as string;
  const sample = await postSample(baseUrl, { event: "Order.Created", url: receiver.url }, client.auth);
  const jobId = sample.json.jobId as string;
  const delivered = await lineWhere((line) => line.msg === "delivered" && line.jobId === jobId);
  t.like(delivered, { attempt: 0, subscriptionId, statusCode: 200 });
});
