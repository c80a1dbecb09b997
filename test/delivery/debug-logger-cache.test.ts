import { createRequire } from "node:module";
import test from "ava";
import "../../src/delivery/agenda/debug-logger-cache.js";

interface Debugger {
  namespace: string;
  extend(namespace: string, delimiter?: string): Debugger;
  (...args: unknown[]): void;
}
type CreateDebug = ((namespace: string) => Debugger) & { init?: unknown };

const createDebug = createRequire(import.meta.url)("debug") as CreateDebug;

test("debug still calls the init hook the cache is installed through (debug is pinned; this fails if its internals change)", (t) => {
  t.is(typeof createDebug.init, "function");
});

test("a logger's children are made once per name and keep their namespaces", (t) => {
  const parent = createDebug("agenda:probe");
  const child = parent.extend("step");
  t.is(parent.extend("step"), child, "the same child again, not a new logger per call");
  t.is(child.namespace, "agenda:probe:step");
  t.not(parent.extend("step", "/"), child, "another delimiter is another child");
  t.is(parent.extend("step", "/").namespace, "agenda:probe/step");
  t.not(createDebug("agenda:probe").extend("step"), child, "children belong to their parent instance");
});
