import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import test from "ava";
import { renderCatalogTypes } from "../../packages/receiver/scripts/catalog-types.js";
import * as source from "../../packages/receiver/src/index.js";
import { DEFAULT_CATALOG } from "../../src/domain/default-catalog.js";
import { OPERATIONAL_EVENT_TYPES } from "../../src/domain/operational-events.js";

const run = promisify(execFile);
const PACKAGE = new URL("../../packages/receiver/", import.meta.url);

test("the catalog's payload types are generated from the service's catalog and up to date", async (t) => {
  const committed = await readFile(new URL("src/catalog.generated.ts", PACKAGE), "utf8");
  t.is(
    committed,
    renderCatalogTypes([...OPERATIONAL_EVENT_TYPES, ...DEFAULT_CATALOG]),
    "run `npm run generate -w @webhooks/receiver` after changing src/domain/default-catalog.ts or operational-events.ts",
  );
  t.deepEqual(
    [...source.CATALOG_EVENTS],
    [...OPERATIONAL_EVENT_TYPES, ...DEFAULT_CATALOG].map((entry) => entry.name),
  );
});

test("the package has no runtime dependencies; Express and Fastify are optional peers", async (t) => {
  const manifest = JSON.parse(await readFile(new URL("package.json", PACKAGE), "utf8")) as Record<string, Record<string, unknown>>;
  t.is(manifest.dependencies, undefined);
  t.deepEqual(Object.keys(manifest.peerDependencies ?? {}).sort(), ["express", "fastify"]);
  t.deepEqual(manifest.peerDependenciesMeta, { express: { optional: true }, fastify: { optional: true } });
});

// `npm test` builds the workspace first (pretest), so this imports what a user's `import` would.
test("the built package resolves by its name: main entry, /express, /fastify, with type declarations", async (t) => {
  const specifier = (path: string) => `@webhooks/receiver${path}`;
  const main = (await import(specifier(""))) as Record<string, unknown>;
  t.deepEqual(Object.keys(main).sort(), Object.keys(source).sort(), "dist exports what src exports");
  t.is(typeof ((await import(specifier("/express"))) as Record<string, unknown>).expressReceiver, "function");
  t.is(typeof ((await import(specifier("/fastify"))) as Record<string, unknown>).fastifyReceiver, "function");

  const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--workspace", "@webhooks/receiver"]);
  const files = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]?.files.map((file) => file.path) ?? [];
  for (const path of [
    "README.md",
    "package.json",
    "dist/index.js",
    "dist/index.d.ts",
    "dist/adapters/express.d.ts",
    "dist/adapters/fastify.d.ts",
  ]) {
    t.true(files.includes(path), `${path} is published`);
  }
  t.false(
    files.some((path) => path.startsWith("src/") || path.startsWith("scripts/")),
    "only dist is published",
  );
});
