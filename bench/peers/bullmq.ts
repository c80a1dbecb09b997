/**
 * The BullMQ baseline: the notification stored in PostgreSQL, its delivery
 * queued in Redis (127.0.0.1:6379, or PEER_REDIS_URL) inside the publish's
 * transaction, before its commit.
 */
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { CONCURRENCY, type Delivery, MAX_ATTEMPTS, runPeer } from "./peer.js";

const redisUrl = process.env.PEER_REDIS_URL ?? "redis://127.0.0.1:6379";
// A name of this run's own: the bench removes its keys at the end, and touches no other.
const name = `webhooks-bench-peer-${process.pid}`;

await runPeer("bullmq", async (_pool, attempt) => {
  // A worker blocks its connection waiting for jobs: it gets one of its own, which may wait without a limit.
  const queue = new Queue<Delivery>(name, { connection: new Redis(redisUrl) });
  const worker = new Worker<Delivery>(name, (job) => attempt(job.data, job.attemptsMade), {
    connection: new Redis(redisUrl, { maxRetriesPerRequest: null }),
    concurrency: CONCURRENCY,
  });
  worker.on("error", (error) => console.error(`bullmq: ${error.message}`));
  return {
    async enqueue(delivery) {
      await queue.add("deliver", delivery, {
        attempts: MAX_ATTEMPTS,
        backoff: { type: "exponential", delay: 1000 },
        removeOnComplete: true,
        removeOnFail: true,
      });
    },
    async stop() {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    },
  };
});
