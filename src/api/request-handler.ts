import type { DescService } from "@bufbuild/protobuf";
import { type ConnectRouter, createConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { declaredLength, HttpError, type NodeRequest, tooLarge } from "./http-body.js";
import { type NodeResponse, RestGateway, writeError } from "./rest-gateway.js";

export interface RequestHandlerOptions {
  routes: (router: ConnectRouter) => void;
  services: readonly DescService[];
  maxBodyBytes: number;
  /** Whether /healthz answers 200. */
  isReady: () => boolean;
}

/**
 * The one request listener of the port: health, the REST gateway, then
 * Connect/gRPC/gRPC-Web for everything else.
 */
export function createRequestHandler(options: RequestHandlerOptions): (req: NodeRequest, res: NodeResponse) => void {
  const routerOptions = {
    readMaxBytes: options.maxBodyBytes,
    // REST callers expect every field, `false` and `0` included.
    jsonOptions: { alwaysEmitImplicit: true },
  };
  const router = createConnectRouter(routerOptions);
  options.routes(router);
  const gateway = new RestGateway(options.services, router.handlers, options.maxBodyBytes);
  const connect = connectNodeAdapter({
    ...routerOptions,
    routes: options.routes,
    fallback: (_req, res) => writeError(res as NodeResponse, new HttpError(404, "not_found", "no such endpoint")),
  });

  return (req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path === "/healthz") {
      const ready = options.isReady();
      const body = JSON.stringify({ status: ready ? "ok" : "unavailable" });
      res.writeHead(ready ? 200 : 503, { "content-type": "application/json" });
      res.end(body);
      return;
    }
    if (gateway.handle(req, res)) return;
    const length = declaredLength(req);
    if (length !== undefined && length > options.maxBodyBytes) {
      writeError(res, tooLarge(options.maxBodyBytes), { connection: "close" });
      return;
    }
    connect(req as never, res as never);
  };
}
