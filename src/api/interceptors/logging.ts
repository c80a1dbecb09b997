import { Code, ConnectError, type ContextValues, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { edgeFacts } from "../transport/edge-facts.js";
import { clientKey } from "./auth.js";
import { watchedStream } from "./watched-stream.js";

/** What every log line of a call carries: the RPC and the request id (X-Request-Id). */
export function callFields(req: { service: { typeName: string }; method: { name: string }; contextValues: ContextValues }) {
  return { rpc: `${req.service.typeName}/${req.method.name}`, requestId: edgeFacts(req.contextValues).requestId };
}

/** gRPC health and reflection: probes and tools call them every few seconds, so they are not logged at info nor traced. */
export function isEcosystemService(typeName: string): boolean {
  return typeName.startsWith("grpc.");
}

/**
 * One log line per call (for a stream, when it ends), with its request id,
 * the authenticated client's id (once authentication got that far), its
 * outcome code and duration.
 */
export function createLoggingInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const level = isEcosystemService(req.service.typeName) ? "debug" : "info";
    const logEnd = (error: unknown) => {
      if (!log.isLevelEnabled(level)) return;
      const code = error === undefined ? "ok" : Code[ConnectError.from(error).code];
      const clientId = req.contextValues.get(clientKey)?.id;
      log[level]({ ...callFields(req), ...(clientId ? { clientId } : {}), code, ms: Math.round(performance.now() - started) }, "rpc");
    };
    try {
      const res = await next(req);
      if (res.stream) return { ...res, message: watchedStream(res.message, logEnd) };
      logEnd(undefined);
      return res;
    } catch (error) {
      logEnd(error);
      throw error;
    }
  };
}
