import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { context, propagation, SpanKind, SpanStatusCode, type TextMapGetter } from "@opentelemetry/api";
import { tracer } from "../../observability/tracer.js";
import { edgeFacts } from "../transport/edge-facts.js";
import { isEcosystemService } from "./logging.js";

const fromHeaders: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

/**
 * A server span per call (but health checks and reflection), continuing the caller's trace when its
 * `traceparent` header names one. Active while the call runs, so that the
 * notifications a publish or a sample accepts carry it to their attempts.
 */
export function createTracingInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (isEcosystemService(req.service.typeName)) return next(req);
    const parent = propagation.extract(context.active(), req.header, fromHeaders);
    const requestId = edgeFacts(req.contextValues).requestId;
    const attributes = {
      "rpc.system": "connect_rpc",
      "rpc.service": req.service.typeName,
      "rpc.method": req.method.name,
      ...(requestId ? { "webhook.request_id": requestId } : {}),
    };
    return tracer.startActiveSpan(
      `${req.service.typeName}/${req.method.name}`,
      { kind: SpanKind.SERVER, attributes },
      parent,
      async (span) => {
        try {
          return await next(req);
        } catch (error) {
          const connectError = ConnectError.from(error);
          span.setAttribute("rpc.connect_rpc.error_code", codeToString(connectError.code));
          span.setStatus({ code: SpanStatusCode.ERROR, message: connectError.rawMessage });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  };
}
