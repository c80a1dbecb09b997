import { type Context, context, propagation, ROOT_CONTEXT } from "@opentelemetry/api";

/**
 * A trace context as one string that can be stored with a job: the W3C
 * `traceparent` of the current span. Through the OpenTelemetry API, so
 * without a registered SDK (tracing off) there is none and nothing is stored.
 */
export function currentTraceParent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a stored `traceparent` continues (the root context when there is none). */
export function contextOfTraceParent(traceparent: string | undefined): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/** The W3C trace headers of the current context, to send on (empty when tracing is off). */
export function currentTraceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}
