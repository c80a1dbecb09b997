import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { PORTAL_DIR } from "../src/api/portal-endpoint.js";

const SOURCE = fileURLToPath(new URL("../portal/", import.meta.url));

/**
 * Bundles the portal (portal/src) into `outDir`: hashed, immutable files
 * under assets/ and an index.html naming them, which the service serves at
 * /portal/ (src/api/portal-endpoint.ts). Everything ships in the bundle: no CDN.
 */
export async function buildPortal(outDir = PORTAL_DIR): Promise<void> {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(join(outDir, "assets"), { recursive: true });
  const result = await build({
    entryPoints: [join(SOURCE, "src/main.tsx")],
    bundle: true,
    minify: true,
    format: "esm",
    target: "es2022",
    platform: "browser",
    jsx: "automatic",
    jsxImportSource: "preact",
    tsconfig: join(SOURCE, "tsconfig.json"),
    entryNames: "[name]-[hash]",
    outdir: join(outDir, "assets"),
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
    join(outDir, "index.html"),
    template.replace("{{script}}", `/portal/assets/${script}`).replace("{{style}}", `/portal/assets/${style}`),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildPortal();
