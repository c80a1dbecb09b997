import { writeFile } from "node:fs/promises";
import { DEFAULT_CATALOG } from "../../../src/domain/default-catalog.js";
import { OPERATIONAL_EVENT_TYPES } from "../../../src/domain/operational-events.js";
import { renderCatalogTypes } from "./catalog-types.js";

/** Rewrites src/catalog.generated.ts from the service's built-in catalog. */
const target = new URL("../src/catalog.generated.ts", import.meta.url);
await writeFile(target, renderCatalogTypes([...OPERATIONAL_EVENT_TYPES, ...DEFAULT_CATALOG]));
console.log(`wrote ${target.pathname}`);
