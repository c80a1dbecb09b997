import anyTest, { type TestFn } from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { type OpenStore, openStore } from "../../src/store/open-store.js";
import { storeTargets } from "../helpers/stores.js";
import { type ContractContext, storeContract } from "./store-contract.js";

const log = pino({ level: "silent" });

// One store per target, opened before and closed after its tests.
for (const target of storeTargets()) {
  const test = anyTest as TestFn<ContractContext>;
  let opened: OpenStore | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  const ready = (async () => {
    const created = await target.create();
    cleanup = created.cleanup;
    opened = await openStore(loadConfig(created.env).store, log);
    return opened.store;
  })();
  // Keep an early failure from becoming an unhandled rejection before the hooks run.
  ready.catch(() => {});

  test.beforeEach(async (t) => {
    t.context.store = await ready;
  });
  test.after.always(async () => {
    await opened?.close();
    await cleanup?.();
  });
  storeContract(test, target.name);
}

// A store that can't run here is reported as skipped, by the variable that enables it.
if (!process.env.POSTGRES_URL) anyTest.skip("postgres: set POSTGRES_URL to run the store contract against PostgreSQL", () => {});
if (!process.env.MONGODB_URL) anyTest.skip("mongodb: set MONGODB_URL to run the store contract against MongoDB", () => {});
