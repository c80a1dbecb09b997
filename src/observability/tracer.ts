import { trace } from "@opentelemetry/api";

/** The service's tracer: a no-op until a tracer provider is registered (tracing.ts). */
export const tracer = trace.getTracer("webhook-notification-service");
