/** The graphile-worker baseline: a `deliver` task, queued by `graphile_worker.add_job` in the publish's transaction. */
import { Logger, run } from "graphile-worker";
import { CONCURRENCY, type Delivery, MAX_ATTEMPTS, runPeer } from "./peer.js";

await runPeer("graphile-worker", async (pool, attempt) => {
  const runner = await run({
    pgPool: pool,
    concurrency: CONCURRENCY,
    noHandleSignals: true,
    // Errors only: its info lines would fill the bench's output.
    logger: new Logger(() => (level, message) => {
      if (level === "error") console.error(`graphile-worker: ${message}`);
    }),
    taskList: { deliver: (payload, helpers) => attempt(payload as Delivery, helpers.job.attempts - 1) },
  });
  return {
    async enqueue(delivery, client) {
      await client.query("SELECT graphile_worker.add_job('deliver', $1::json, max_attempts => $2)", [
        JSON.stringify(delivery),
        MAX_ATTEMPTS,
      ]);
    },
    stop: () => runner.stop(),
  };
});
