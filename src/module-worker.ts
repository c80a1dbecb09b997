import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * Starts a worker thread on one of our modules, given as the URL of its
 * built `.js` file beside the caller's (`new URL("./x.js", import.meta.url)`).
 * Where the caller itself runs from TypeScript source (the tests, under
 * tsx), the worker runs the `.ts` source instead: a Node 20 worker does not
 * inherit the `--import tsx` loader, so it registers tsx before importing.
 */
export function startModuleWorker(moduleUrl: URL, callerUrl: string, options: WorkerOptions): Worker {
  if (!callerUrl.endsWith(".ts")) return new Worker(moduleUrl, options);
  const source = moduleUrl.href.replace(/\.js$/, ".ts");
  const tsx = import.meta.resolve("tsx/esm/api");
  const code = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(code, { ...options, eval: true });
}
