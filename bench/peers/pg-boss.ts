/** The pg-boss baseline: a `deliver` queue, sent to in the publish's transaction, worked by one worker per delivery in flight. */
import PgBoss from "pg-boss";
import { CONCURRENCY, type Delivery, MAX_ATTEMPTS, runPeer } from "./peer.js";

const QUEUE = "deliver";

await runPeer("pg-boss", async (pool, attempt) => {
  const boss = new PgBoss({ db: { executeSql: (text, values) => pool.query(text, values) } });
  boss.on("error", (error) => console.error(`pg-boss: ${error.message}`));
  await boss.start();
  await boss.createQueue(QUEUE, { name: QUEUE, retryLimit: MAX_ATTEMPTS - 1, retryDelay: 1, retryBackoff: true });
  // pg-boss 10 runs a worker's jobs one batch at a time: concurrency is that many workers.
  for (let i = 0; i < CONCURRENCY; i++)
    await boss.work<Delivery>(QUEUE, { batchSize: 1, pollingIntervalSeconds: 0.5, includeMetadata: true }, async ([job]) => {
      if (job) await attempt(job.data, job.retryCount);
    });
  return {
    async enqueue(delivery, client) {
      await boss.send(QUEUE, delivery, { db: { executeSql: (text, values) => client.query(text, values) } });
    },
    stop: () => boss.stop({ graceful: true, wait: true }),
  };
});
