import { context, propagation, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import test from "ava";
import { TracingObserver } from "../../src/observability/delivery-tracing.js";
import { contextOfTraceParent, currentTraceHeaders, currentTraceParent } from "../../src/observability/trace-context.js";
import { notificationRecord } from "../helpers/subscriptions.js";

const exporter = new InMemorySpanExporter();
// Read before anything is registered: the API alone does nothing.
const beforeRegistration = currentTraceParent();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
const tracer = trace.getTracer("test");

const notification = notificationRecord({ attemptCount: 1 });

test.serial("without a registered SDK there is no trace context to store", (t) => {
  t.is(beforeRegistration, undefined);
});

test.serial("a stored traceparent brings an attempt's span into the accepting call's trace, as its child", async (t) => {
  exporter.reset();
  const stored = tracer.startActiveSpan("publish", (span) => {
    const traceparent = currentTraceParent();
    t.deepEqual(currentTraceHeaders(), { traceparent: traceparent as string });
    span.end();
    return traceparent;
  });
  t.regex(stored ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  const startedAt = new Date(Date.now() - 1000);
  // Later, elsewhere (another instance, after a restart): only the stored string is left.
  await context.with(contextOfTraceParent(stored), async () => {
    await Promise.resolve();
    new TracingObserver().observe({
      kind: "attempt-finished",
      at: new Date(),
      notification,
      attempt: { notificationId: "ntf_1", attempt: 1, startedAt, durationMs: 250, statusCode: 503, succeeded: false },
      status: "pending",
      sent: true,
    });
  });
  const [publish, attempt] = exporter.getFinishedSpans();
  t.is(attempt?.name, "webhook.attempt");
  t.is(attempt?.spanContext().traceId, publish?.spanContext().traceId);
  t.is(attempt?.parentSpanContext?.spanId, publish?.spanContext().spanId);
  t.like(attempt?.attributes, {
    "webhook.job_id": "ntf_1",
    "webhook.attempt": 1,
    "http.response.status_code": 503,
    "webhook.attempt.duration_ms": 250,
    "webhook.outcome": "failed_retryable",
  });
  t.is(attempt?.status.code, SpanStatusCode.ERROR);
  t.is(attempt?.startTime[0], Math.floor(startedAt.getTime() / 1000), "it starts when the attempt did");
});

test.serial("no stored traceparent: the attempt's span starts a trace of its own; other events make no span", (t) => {
  exporter.reset();
  context.with(contextOfTraceParent(undefined), () => {
    const observer = new TracingObserver();
    observer.observe({ kind: "published", at: new Date(), event: "Order.Created", fanout: 1 });
    observer.observe({
      kind: "attempt-finished",
      at: new Date(),
      notification,
      attempt: { notificationId: "ntf_1", attempt: 0, startedAt: new Date(), durationMs: 5, statusCode: 200, succeeded: true },
      status: "delivered",
      sent: true,
    });
  });
  const spans = exporter.getFinishedSpans();
  t.is(spans.length, 1);
  t.is(spans[0]?.parentSpanContext, undefined);
  t.is(spans[0]?.status.code, SpanStatusCode.UNSET);
});
