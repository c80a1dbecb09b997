import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { HttpError, type NodeRequest, type NodeResponse, writeError } from "./http-body.js";

export const PORTAL_PATH = "/portal/";

/**
 * Where `npm run build` writes the portal (tools/build-portal.ts): dist/portal
 * at the package root, which is three levels up both from src/api/transport
 * (under tsx) and from dist/api/transport (compiled).
 */
export const PORTAL_DIR = fileURLToPath(new URL("../../../dist/portal/", import.meta.url));

/**
 * Only the bundle's own files: no inline script or style, no other origin.
 * The API is the same origin, so `connect-src 'self'` covers it.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".svg": "image/svg+xml",
};

interface Asset {
  body: Buffer;
  headers: Record<string, string>;
}

function asset(body: Buffer, name: string, cacheControl: string): Asset {
  return {
    body,
    headers: {
      ...SECURITY_HEADERS,
      "content-type": CONTENT_TYPES[extname(name)] ?? "application/octet-stream",
      "cache-control": cacheControl,
      etag: `"${createHash("sha256").update(body).digest("base64url")}"`,
    },
  };
}

/**
 * The built portal, read once: index.html, and the hashed files under
 * assets/. Undefined when it is not built, or was being replaced as it was
 * read (a build moves the new one into place): the API serves on without it.
 */
function load(dir: string): { index: Asset; assets: Map<string, Asset> } | undefined {
  try {
    const assets = new Map<string, Asset>();
    const assetDir = join(dir, "assets");
    for (const name of readdirSync(assetDir)) {
      // Names carry their content's hash, so a name never changes meaning.
      assets.set(name, asset(readFileSync(join(assetDir, name)), name, "public, max-age=31536000, immutable"));
    }
    // Revalidated on every use, so a deploy is seen at once.
    return { index: asset(readFileSync(join(dir, "index.html")), "index.html", "no-cache"), assets };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * `GET /portal/`: the web portal (see docs/portal.md), a static page that
 * talks to this same port through the Connect API. `/portal/assets/*` are
 * its hashed, immutable files; every other path under /portal/ is the page.
 * Answers true if the path was the portal's.
 */
export function createPortalEndpoint(dir = PORTAL_DIR): (path: string, req: NodeRequest, res: NodeResponse) => boolean {
  const built = load(dir);
  return (path, req, res) => {
    if (path === "/portal") {
      res.writeHead(308, { location: PORTAL_PATH, "content-length": 0 });
      res.end();
      return true;
    }
    if (!path.startsWith(PORTAL_PATH)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      writeError(res, new HttpError(405, "unimplemented", `${req.method} is not supported here; use GET, HEAD`), { allow: "GET, HEAD" });
      return true;
    }
    if (!built) {
      writeError(res, new HttpError(404, "not_found", "the portal is not built: run `npm run build`"));
      return true;
    }
    const rest = path.slice(PORTAL_PATH.length);
    const file = rest.startsWith("assets/") ? built.assets.get(rest.slice("assets/".length)) : built.index;
    if (!file) {
      writeError(res, new HttpError(404, "not_found", "no such portal file"));
      return true;
    }
    const presented = req.headers["if-none-match"]?.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
    if (presented?.includes(file.headers.etag as string)) {
      res.writeHead(304, file.headers);
      res.end();
      return true;
    }
    res.writeHead(200, { ...file.headers, "content-length": file.body.byteLength });
    if (req.method === "HEAD") res.end();
    else res.end(file.body);
    return true;
  };
}
