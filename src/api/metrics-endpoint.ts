import type { Registry } from "prom-client";
import { secretsEqual } from "../domain/clients.js";
import { HttpError, type NodeRequest } from "./http-body.js";
import { type NodeResponse, writeError } from "./rest-gateway.js";

export const METRICS_PATH = "/metrics";

export interface MetricsEndpointOptions {
  registry: Registry;
  /** When set, the scrape must present `Authorization: Bearer <token>`. */
  token?: string | undefined;
  onError: (error: unknown) => void;
}

/** `GET /metrics`: the Prometheus text format, optionally behind a bearer token. */
export function createMetricsEndpoint(options: MetricsEndpointOptions): (req: NodeRequest, res: NodeResponse) => void {
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      writeError(res, new HttpError(405, "unimplemented", `${req.method} is not supported here; use GET, HEAD`), { allow: "GET, HEAD" });
      return;
    }
    if (options.token !== undefined) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
      if (!presented || !secretsEqual(presented, options.token)) {
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
