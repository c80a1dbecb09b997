import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import test from "ava";
import { createClient } from "../helpers/admin.js";
import { postPublish, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { ADMIN_TOKEN, serviceOn, startTestService } from "../helpers/service.js";
import { storeTargets } from "../helpers/stores.js";

// What startTracing registers, with an in-memory exporter instead of OTLP; this process (one test file) only.
const exporter = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const ORDER = { OrderId: "ord_42", CustomerId: "cus_7", TotalAmount: 42.5, Currency: "EUR" };
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** The finished spans once `done` holds of them (within 20 s). */
async function spansWhen(done: (spans: ReadableSpan[]) => boolean): Promise<ReadableSpan[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const spans = exporter.getFinishedSpans();
    if (done(spans)) return spans;
    if (Date.now() > deadline) throw new Error(`spans: ${spans.map((span) => span.name).join(", ")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const attemptsOf = (spans: ReadableSpan[], jobIds: readonly string[]) =>
  spans.filter((span) => span.name === "webhook.attempt" && jobIds.includes(span.attributes["webhook.job_id"] as string));

for (const target of storeTargets()) {
  test.serial(`${target.name}: a publish to two subscriptions is one trace: the call's span and a child span per attempt`, async (t) => {
    exporter.reset();
    const receivers = [await Receiver.start(), await Receiver.start()];
    t.teardown(async () => {
      for (const receiver of receivers) await receiver.close();
    });
    const { baseUrl } = await serviceOn(t, target, { PROPAGATE_TRACE_CONTEXT: "true" });
    const client = await createClient(baseUrl, "traced");
    for (const receiver of receivers) {
      const created = await postSubscription(baseUrl, { event: "Order.Created", url: receiver.url }, client.auth);
      t.is(created.status, 200, created.text);
    }
    const published = await postPublish(baseUrl, { clientId: client.id, event: "Order.Created", payload: ORDER }, admin);
    t.is(published.status, 200, published.text);
    const jobIds = published.json.jobIds as string[];
    t.is(jobIds.length, 2);

    const spans = await spansWhen((all) => attemptsOf(all, jobIds).length === 2);
    const publish = spans.find((span) => span.name === "webhooks.v1.EventService/PublishEvent");
    if (!publish) return t.fail("no span for the publish");
    t.is(publish.kind, SpanKind.SERVER);
    t.is(publish.attributes["rpc.method"], "PublishEvent");
    const traceId = publish.spanContext().traceId;
    const attempts = attemptsOf(spans, jobIds);
    t.deepEqual(attempts.map((span) => span.attributes["webhook.job_id"]).sort(), [...jobIds].sort());
    for (const attempt of attempts) {
      t.is(attempt.spanContext().traceId, traceId, "the attempt is in the publish's trace");
      t.is(attempt.parentSpanContext?.spanId, publish.spanContext().spanId, "a child of the publish's span");
      t.like(attempt.attributes, {
        "webhook.attempt": 0,
        "http.response.status_code": 200,
        "webhook.outcome": "delivered",
        "webhook.event": "Order.Created",
      });
      t.is(typeof attempt.attributes["webhook.attempt.duration_ms"], "number");
    }
    for (const receiver of receivers) {
      const [request] = await receiver.waitFor(1);
      t.regex(
        String(request?.headers.traceparent),
        new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
        "PROPAGATE_TRACE_CONTEXT sends the trace on",
      );
    }
  });

  test.serial(`${target.name}: an attempt made after a restart joins the trace of the publish that accepted it`, async (t) => {
    exporter.reset();
    const store = await target.create();
    // Long enough for the first service to stop before the retry falls due.
    const env = { ...store.env, RETRY_SCHEDULE: "5s" };
    let first = await startTestService(env);
    let answers = [500];
    const receiver = await Receiver.start(() => ({ status: answers.shift() ?? 200 }));
    t.teardown(async () => {
      await first.service.stop();
      await receiver.close();
      await store.cleanup();
    });
    const client = await createClient(first.baseUrl, "restarted");
    const created = await postSubscription(first.baseUrl, { event: "Order.Created", url: receiver.url }, client.auth);
    t.is(created.status, 200, created.text);
    const published = await postPublish(first.baseUrl, { clientId: client.id, event: "Order.Created", payload: ORDER }, admin);
    const jobIds = published.json.jobIds as string[];
    await receiver.waitFor(1);
    await first.service.stop();
    const stoppedAt = Date.now();
    answers = [];
    first = await startTestService(env);

    const [, retry] = await receiver.waitFor(2);
    t.true((retry?.at ?? 0) > stoppedAt, "the retry ran in the second service");
    const spans = await spansWhen((all) => attemptsOf(all, jobIds).length === 2);
    const publish = spans.find((span) => span.name === "webhooks.v1.EventService/PublishEvent");
    if (!publish) return t.fail("no span for the publish");
    const attempts = attemptsOf(spans, jobIds).sort(
      (a, b) => Number(a.attributes["webhook.attempt"]) - Number(b.attributes["webhook.attempt"]),
    );
    t.like(attempts[0]?.attributes, { "webhook.attempt": 0, "http.response.status_code": 500, "webhook.outcome": "failed_retryable" });
    t.like(attempts[1]?.attributes, { "webhook.attempt": 1, "http.response.status_code": 200, "webhook.outcome": "delivered" });
    for (const attempt of attempts) {
      t.is(attempt.spanContext().traceId, publish.spanContext().traceId);
      t.is(attempt.parentSpanContext?.spanId, publish.spanContext().spanId);
    }
  });
}
