import test from "ava";
import threadPoolSize from "../src/thread-pool.cjs";

test("the thread pool gets one signing thread per core, at least two, unless UV_THREADPOOL_SIZE is set", (t) => {
  t.is(threadPoolSize({}, 2), "2");
  t.is(threadPoolSize({}, 16), "16");
  t.is(threadPoolSize({}, 1), "2");
  t.is(threadPoolSize({ UV_THREADPOOL_SIZE: "8" }, 2), "8");
  t.is(threadPoolSize({ UV_THREADPOOL_SIZE: "" }, 3), "3", "an empty value counts as unset");
});
