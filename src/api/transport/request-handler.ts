import type { DescService } from "@bufbuild/protobuf";
import { type ConnectRouter, createConnectRouter } from "@connectrpc/connect";
import { createConnectAdapter } from "./connect-adapter.js";
import { HttpError, type NodeRequest, type NodeResponse, writeError } from "./http-body.js";
import { METRICS_PATH } from "./metrics-endpoint.js";
import { OPENAPI_PATH, serveOpenApi } from "./openapi-endpoint.js";
import { createPortalEndpoint } from "./portal-endpoint.js";
import { assignRequestId } from "./request-id.js";
import { ACCEPTED_COMPRESSIONS } from "./request-message.js";
import { RestGateway } from "./rest-gateway.js";

/** Whether the service can do its work now, and if not, why. */
export interface Readiness {
  ok: boolean;
  reason?: string;
}

export interface RequestHandlerOptions {
  routes: (router: ConnectRouter) => void;
  services: readonly DescService[];
  maxBodyBytes: number;
  /** What /readyz and /healthz answer. */
  readiness: () => Readiness;
  /** What answers GET /metrics; undefined: metrics are off (404). */
  metrics: ((req: NodeRequest, res: NodeResponse) => void) | undefined;
}

export type RequestHandler = (req: NodeRequest, res: NodeResponse) => void;

/**
 * Liveness and readiness, for load balancers and Kubernetes probes: /livez
 * answers 200 while the process serves requests at all; /readyz (and
 * /healthz, its older name) answers 200 only while deliveries can run, and
 * 503 with the reason otherwise. Answers true if it answered.
 */
function answerHealth(path: string, res: NodeResponse, readiness: () => Readiness): boolean {
  if (path === "/livez") {
    writeJson(res, 200, { status: "ok" });
    return true;
  }
  if (path !== "/readyz" && path !== "/healthz") return false;
  const ready = readiness();
  writeJson(res, ready.ok ? 200 : 503, ready.ok ? { status: "ok" } : { status: "unavailable", reason: ready.reason ?? "not ready" });
  return true;
}

function writeJson(res: NodeResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** What the port answers while the service opens its store: alive, not ready, nothing else yet. */
export function startingHandler(): RequestHandler {
  const starting = () => ({ ok: false, reason: "starting" });
  return (req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    if (answerHealth(path, res, starting)) return;
    writeError(res, new HttpError(503, "unavailable", "the service is starting; retry in a moment"), { "retry-after": "1" });
  };
}

/**
 * The one request listener of the port: health, OpenAPI, metrics, the portal, the REST gateway, then
 * Connect/gRPC/gRPC-Web for everything else, all on the same handlers.
 */
export function createRequestHandler(options: RequestHandlerOptions): RequestHandler {
  const router = createConnectRouter({
    readMaxBytes: options.maxBodyBytes,
    acceptCompression: ACCEPTED_COMPRESSIONS,
    // REST callers expect every field, `false` and `0` included.
    jsonOptions: { alwaysEmitImplicit: true },
  });
  options.routes(router);
  const gateway = new RestGateway(options.services, router.handlers, options.maxBodyBytes);
  const connect = createConnectAdapter(router.handlers, {
    maxBodyBytes: options.maxBodyBytes,
    fallback: (_req, res) => writeError(res, new HttpError(404, "not_found", "no such endpoint")),
  });

  const portal = createPortalEndpoint();
  return (req, res) => {
    assignRequestId(req, res);
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    if (answerHealth(path, res, options.readiness)) return;
    if (path === OPENAPI_PATH) {
      serveOpenApi(req, res);
      return;
    }
    if (path === METRICS_PATH && options.metrics) {
      options.metrics(req, res);
      return;
    }
    if (portal(path, req, res)) return;
    if (gateway.handle(req, res)) return;
    connect(req, res);
  };
}
