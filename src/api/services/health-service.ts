import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import type { Readiness } from "../transport/request-handler.js";

export interface HealthServiceOptions {
  /** The same answer /readyz gives. */
  readiness: () => Readiness;
  /** Names a client may ask about; "" (the server as a whole) is always known. */
  services: readonly string[];
  /** How often a Watch looks at the readiness for a change. */
  watchIntervalMs: number;
  /** Aborted as the service shuts down: every Watch says NOT_SERVING and ends. */
  closing: AbortSignal;
}

/**
 * grpc.health.v1.Health over the port's Connect/gRPC handlers: SERVING
 * exactly when /readyz answers 200 (the store and the delivery scheduler
 * work), for the server as a whole and for every service it serves alike.
 */
export function createHealthService(options: HealthServiceOptions): ServiceImpl<typeof Health> {
  const known = new Set(["", ...options.services]);
  const status = () => (options.readiness().ok ? Status.SERVING : Status.NOT_SERVING);
  return {
    check(request) {
      if (!known.has(request.service)) throw new ConnectError(`unknown service ${JSON.stringify(request.service)}`, Code.NotFound);
      return { status: status() };
    },
    async *watch(request, context) {
      // As the protocol says: an unknown service is reported, not refused, and watched on (it never appears here).
      const current = () => (known.has(request.service) ? status() : Status.SERVICE_UNKNOWN);
      const ended = AbortSignal.any([context.signal, options.closing]);
      let last: Status | undefined;
      for (;;) {
        const now = ended.aborted && known.has(request.service) ? Status.NOT_SERVING : current();
        if (now !== last) {
          last = now;
          yield { status: now };
        }
        if (ended.aborted) return;
        await nextLook(options.watchIntervalMs, ended);
      }
    },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function nextLook(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
