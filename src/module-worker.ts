import { setFlagsFromString } from "node:v8";
import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * Starts a worker thread on one of our modules, given as the URL of its
 * built `.js` file beside the caller's (`new URL("./x.js", import.meta.url)`).
 * Where the caller itself runs from TypeScript source (the tests, under
 * tsx), the worker runs the `.ts` source instead: a Node 20 worker does not
 * inherit the `--import tsx` loader, so it registers tsx before importing.
 *
 * A `resourceLimits.maxYoungGenerationSizeMb` in `options` holds even where
 * the process runs with `--max-semi-space-size` (see honourYoungGenerationLimit).
 */
export function startModuleWorker(moduleUrl: URL, callerUrl: string, options: WorkerOptions): Worker {
  if (options.resourceLimits?.maxYoungGenerationSizeMb !== undefined) honourYoungGenerationLimit();
  if (!callerUrl.endsWith(".ts")) return new Worker(moduleUrl, options);
  const source = moduleUrl.href.replace(/\.js$/, ".ts");
  const tsx = import.meta.resolve("tsx/esm/api");
  const code = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(code, { ...options, eval: true });
}

/**
 * V8 sizes every new isolate's young generation by `--max-semi-space-size`
 * when the process sets it (`npm start` gives the event loop 16 MB
 * semi-spaces), and then ignores a worker's own
 * `resourceLimits.maxYoungGenerationSizeMb`. The flag is read only as an
 * isolate is made: clearing it leaves the threads already running as they
 * are, and lets each worker started later have its own limit (or, without
 * one, Node's default).
 */
function honourYoungGenerationLimit(): void {
  setFlagsFromString("--max-semi-space-size=0");
}
