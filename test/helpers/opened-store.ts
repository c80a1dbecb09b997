import type { TestFn } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { type OpenStore, openStore } from "../../src/store/open-store.js";
import { FAST_TEST_ENV } from "./service.js";
import { storeTargets } from "./stores.js";

/**
 * One store on the first target (embedded PGlite) for a whole test file:
 * opened before its tests, closed and removed after them. The answer gives
 * it to the tests (it throws if called before the store opened).
 */
export function storeForFile(test: TestFn): () => OpenStore {
  let opened: OpenStore | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  test.before(async () => {
    const created = await (storeTargets()[0]?.create() ?? Promise.reject(new Error("no store target")));
    cleanup = created.cleanup;
    opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...created.env }).store, pino({ level: "silent" }));
  });
  test.after.always(async () => {
    await opened?.close();
    await cleanup?.();
  });
  return () => {
    if (!opened) throw new Error("the file's store is opened in test.before");
    return opened;
  };
}
