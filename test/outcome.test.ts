import test from "ava";
import { outcome } from "../src/outcome.js";

test("an outcome fulfils, or rejects with the error; only the first settle counts", async (t) => {
  const fulfilled = outcome();
  fulfilled.settle();
  fulfilled.settle(new Error("too late"));
  await t.notThrowsAsync(fulfilled.promise);

  const failed = outcome();
  const error = new Error("it failed");
  failed.settle(error);
  failed.settle();
  t.is(await t.throwsAsync(failed.promise), error);
});

test("a rejected outcome nobody awaits is not an unhandled rejection", async (t) => {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", listener);
  try {
    outcome().settle(new Error("nobody waits"));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    t.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", listener);
  }
});
