import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { PORTAL_DIR } from "../src/api/transport/portal-endpoint.js";

const SOURCE = fileURLToPath(new URL("../portal/", import.meta.url));

/**
 * Bundles the portal (portal/src; or another `entry`, such as a test page under
 * portal/test-pages) into `outDir`: hashed, immutable files
 * under assets/ and an index.html naming them, which the service serves at
 * /portal/ (src/api/transport/portal-endpoint.ts). Everything ships in the bundle: no CDN.
 * Built beside `outDir` and moved into place, so that a service starting
 * meanwhile (tests run in parallel) reads the old build or the new one, never half of one.
 */
export async function buildPortal(outDir = PORTAL_DIR, entry = join(SOURCE, "src/main.tsx")): Promise<void> {
  const target = outDir.replace(/\/+$/, "");
  const building = `${target}.building-${process.pid}`;
  await rm(building, { recursive: true, force: true });
  await mkdir(join(building, "assets"), { recursive: true });
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: "esm",
    target: "es2022",
    platform: "browser",
    jsx: "automatic",
    jsxImportSource: "preact",
    tsconfig: join(SOURCE, "tsconfig.json"),
    entryNames: "[name]-[hash]",
    outdir: join(building, "assets"),
    metafile: true,
    legalComments: "none",
    logLevel: "warning",
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const script = outputs.find((name) => name.endsWith(".js"));
  const style = outputs.find((name) => name.endsWith(".css"));
  if (!script || !style) throw new Error(`the portal bundle lacks a script or a stylesheet: ${outputs.join(", ")}`);
  const template = await readFile(join(SOURCE, "index.html"), "utf8");
  await writeFile(
    join(building, "index.html"),
    template.replace("{{script}}", `/portal/assets/${script}`).replace("{{style}}", `/portal/assets/${style}`),
  );
  const replaced = `${target}.replaced-${process.pid}`;
  await rename(target, replaced).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
  await rename(building, target);
  await rm(replaced, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildPortal();
