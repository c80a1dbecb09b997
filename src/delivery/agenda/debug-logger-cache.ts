import { createRequire } from "node:module";

/**
 * Agenda asks the `debug` package for a new logger at nearly every step of
 * every job (`log.extend("step")(…)`), logging or not: ~12 % of a delivery
 * process's allocations, and an isatty system call each to choose colours.
 * Here each logger's `extend` answers the child it made before for the same
 * name, and colours are chosen once (an explicit DEBUG_COLORS still wins).
 * A child keeps the `log` function its parent had when it was first made;
 * nothing in our dependencies sets one. main.ts imports this first, before
 * anything loads `debug`.
 *
 * This patches an internal of `debug` (its `init` hook, called for every
 * logger it makes), so `debug` is pinned to an exact version in
 * package.json, and test/delivery/debug-logger-cache.test.ts fails if the
 * hook is no longer called or loggers stop being shared.
 */
process.env.DEBUG_COLORS ??= process.stderr.isTTY ? "yes" : "no";

interface Debugger {
  namespace: string;
  extend(namespace: string, delimiter?: string): Debugger;
}
interface CreateDebug {
  init?: (logger: Debugger) => void;
}

const createDebug = createRequire(import.meta.url)("debug") as CreateDebug;
const init = createDebug.init;
createDebug.init = (logger) => {
  init?.(logger);
  const extend = logger.extend;
  const children = new Map<string, Debugger>();
  logger.extend = function (namespace, delimiter) {
    const key = `${delimiter ?? ":"}${namespace}`;
    let child = children.get(key);
    if (!child) {
      child = extend.call(this, namespace, delimiter);
      children.set(key, child);
    }
    return child;
  };
};
