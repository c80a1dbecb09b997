/**
 * Preloaded by `npm start` (`node --require ./dist/thread-pool.cjs …`), as
 * CommonJS: libuv sizes its thread pool once, when the pool first starts, and
 * the ESM loader starts it while reading the first module, before any of
 * ours runs.
 *
 * That pool signs every delivery (RSA-2048, ~0.3 ms each). With more signing
 * threads than cores they preempt the main thread that feeds them, and the
 * whole pipeline waits on it: on 2 cores, 2 threads instead of libuv's
 * default 4 gave 3.6 % more deliveries/s over four interleaved pairs of the
 * bench's scenario (a). Fewer threads than cores would leave signing short.
 * So: one per core, at least 2 (DNS lookups share the pool), unless
 * UV_THREADPOOL_SIZE says otherwise.
 */
import os = require("node:os");

function threadPoolSize(env: NodeJS.ProcessEnv, cores: number): string {
  return env.UV_THREADPOOL_SIZE ?? String(Math.max(2, cores));
}

process.env.UV_THREADPOOL_SIZE = threadPoolSize(process.env, os.availableParallelism());

export = threadPoolSize;
