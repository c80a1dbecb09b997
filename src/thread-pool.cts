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
 * So: one per core (of the container's CPU quota, if it has one), at least 2
 * (DNS lookups share the pool), unless UV_THREADPOOL_SIZE says otherwise.
 */
import fs = require("node:fs");
import os = require("node:os");

function threadPoolSize(env: NodeJS.ProcessEnv, cores: number): string {
  return env.UV_THREADPOOL_SIZE || String(Math.max(2, cores));
}

/**
 * The cores this process may use: a container's CPU quota (cgroup v2
 * `cpu.max`, e.g. "200000 100000" for 2), which this Node's
 * availableParallelism() does not count, else the CPUs it may run on.
 */
function cores(): number {
  const available = os.availableParallelism();
  try {
    const [quota, period] = fs.readFileSync("/sys/fs/cgroup/cpu.max", "utf8").trim().split(/\s+/).map(Number);
    if (quota && period && Number.isFinite(quota)) return Math.max(1, Math.min(available, Math.ceil(quota / period)));
  } catch {
    // No cgroup v2 quota to read (not Linux, or no container): the CPUs are the limit.
  }
  return available;
}

process.env.UV_THREADPOOL_SIZE = threadPoolSize(process.env, cores());

export = threadPoolSize;
