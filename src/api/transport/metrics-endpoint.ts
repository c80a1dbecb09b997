import type { Registry } from "prom-client";
import { secretMatcher } from "../../domain/clients.js";
import { bearerToken } from "../interceptors/bearer-token.js";
import { HttpError, type NodeRequest, type NodeResponse, writeError } from "./http-body.js";

export const METRICS_PATH = "/metrics";

export interface MetricsEndpointOptions {
  registry: Registry;
  /** When set, the scrape must present `Authorization: Bearer <token>`. */
  token?: string | undefined;
  onError: (error: unknown) => void;
}

/** `GET /metrics`: the Prometheus text format, optionally behind a bearer token. */
export function createMetricsEndpoint(options: MetricsEndpointOptions): (req: NodeRequest, res: NodeResponse) => void {
  const isToken = options.token !== undefined ? secretMatcher(options.token) : undefined;
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      writeError(res, new HttpError(405, "unimplemented", `${req.method} is not supported here; use GET, HEAD`), { allow: "GET, HEAD" });
      return;
    }
    if (isToken) {
      const presented = bearerToken(req.headers.authorization);
      if (!presented || !isToken(presented)) {
        writeError(res, new HttpError(401, "unauthenticated", "GET /metrics needs Authorization: Bearer <METRICS_TOKEN>"), {
          "www-authenticate": "Bearer",
        });
        return;
      }
    }
    options.registry.metrics().then(
      (text) => {
        const body = Buffer.from(text);
        res.writeHead(200, {
          "content-type": options.registry.contentType,
          "cache-control": "no-store",
          "content-length": body.byteLength,
        });
        if (req.method === "HEAD") res.end();
        else res.end(body);
      },
      (error: unknown) => {
        options.onError(error);
        writeError(res, new HttpError(500, "internal", "collecting metrics failed"));
      },
    );
  };
}
