import { createHash } from "node:crypto";
import document from "../../gen/openapi.json" with { type: "json" };
import { HttpError, type NodeRequest, type NodeResponse, writeError } from "./http-body.js";

export const OPENAPI_PATH = "/openapi.json";

const body = Buffer.from(JSON.stringify(document));
const etag = `"${createHash("sha256").update(body).digest("base64url")}"`;
const cacheHeaders = {
  // Revalidated on every use (cheaply, by ETag), so a deploy is seen at once.
  "cache-control": "no-cache",
  etag,
  // Public and credential-free, so API tools on other origins may read it.
  "access-control-allow-origin": "*",
};

/**
 * `GET /openapi.json`: the OpenAPI 3.1 document generated from the proto
 * (src/gen/openapi.json, by tools/protoc-gen-openapi). No authentication.
 */
export function serveOpenApi(req: NodeRequest, res: NodeResponse): void {
  if (req.method !== "GET" && req.method !== "HEAD") {
    writeError(res, new HttpError(405, "unimplemented", `${req.method} is not supported here; use GET, HEAD`), { allow: "GET, HEAD" });
    return;
  }
  const presented = req.headers["if-none-match"]?.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
  if (presented?.includes(etag) || presented?.includes("*")) {
    res.writeHead(304, cacheHeaders);
    res.end();
    return;
  }
  res.writeHead(200, { ...cacheHeaders, "content-type": "application/json", "content-length": body.byteLength });
  if (req.method === "HEAD") res.end();
  else res.end(body);
}
