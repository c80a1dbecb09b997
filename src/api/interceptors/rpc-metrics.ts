import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { ServiceMetrics } from "../../observability/metrics.js";

/** Counts every call by RPC and Connect code (as on the wire: not_found, unauthenticated…), and times it (REST calls included: they run the same handlers). */
export function createRpcMetricsInterceptor(metrics: ServiceMetrics): Interceptor {
  return (next) => async (req) => {
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const stopTimer = metrics.rpcDuration.startTimer({ rpc });
    try {
      const res = await next(req);
      metrics.rpcRequests.inc({ rpc, code: "ok" });
      return res;
    } catch (error) {
      metrics.rpcRequests.inc({ rpc, code: codeToString(ConnectError.from(error).code) });
      throw error;
    } finally {
      stopTimer();
    }
  };
}
