import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { createPortalEndpoint } from "../../../src/api/transport/portal-endpoint.js";

/** A server answering with the portal endpoint only (418 for a path that is not the portal's). */
async function serve(dir: string): Promise<{ base: string; server: Server }> {
  const portal = createPortalEndpoint(dir);
  const server = createServer((req, res) => {
    if (portal((req.url ?? "/").split("?", 1)[0] ?? "/", req, res)) return;
    res.writeHead(418).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

test("a built portal: index no-cache, hashed assets immutable, both under the CSP, revalidated by ETag", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "wh-portal-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, "assets"));
  await writeFile(join(dir, "index.html"), "<!doctype html><title>portal</title>");
  await writeFile(join(dir, "assets", "main-ABC123.js"), "export {};");
  const { base, server } = await serve(dir);
  t.teardown(() => server.close());

  const index = await fetch(`${base}/portal/`);
  t.is(index.status, 200);
  t.is(index.headers.get("cache-control"), "no-cache");
  t.is(index.headers.get("content-type"), "text/html; charset=utf-8");
  t.regex(index.headers.get("content-security-policy") ?? "", /^default-src 'self'; script-src 'self'; style-src 'self'/);
  t.is(await index.text(), "<!doctype html><title>portal</title>");
  // Every other path under /portal/ is the page (its routes live in the fragment).
  t.is((await fetch(`${base}/portal/anything`)).status, 200);
  const revalidated = await fetch(`${base}/portal/`, { headers: { "if-none-match": index.headers.get("etag") ?? "" } });
  t.is(revalidated.status, 304);

  const script = await fetch(`${base}/portal/assets/main-ABC123.js`);
  t.is(script.headers.get("cache-control"), "public, max-age=31536000, immutable");
  t.is(script.headers.get("content-type"), "text/javascript; charset=utf-8");
  t.is(script.headers.get("x-content-type-options"), "nosniff");
  t.is((await fetch(`${base}/portal/assets/main-OTHER.js`)).status, 404);
  t.is((await fetch(`${base}/portal/`, { method: "POST" })).status, 405);
  t.is((await fetch(`${base}/portal`, { redirect: "manual" })).headers.get("location"), "/portal/");
  t.is((await fetch(`${base}/api/anything`)).status, 418, "not the portal's path");
});

test("an unbuilt portal answers 404 saying how to build it", async (t) => {
  const { base, server } = await serve(join(tmpdir(), "wh-portal-never-built"));
  t.teardown(() => server.close());
  const answer = await fetch(`${base}/portal/`);
  t.is(answer.status, 404);
  t.regex(await answer.text(), /npm run build/);
});
