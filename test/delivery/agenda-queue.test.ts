import type { Agenda } from "agenda";
import test from "ava";
import { searchQueueInPlace } from "../../src/delivery/agenda-queue.js";

// Agenda's own queue class (not exported: loaded from the file next to its entry point).
const { JobProcessingQueue } = (await import(new URL("JobProcessingQueue.js", import.meta.resolve("agenda")).href)) as {
  JobProcessingQueue: new (
    agenda: unknown,
  ) => {
    insert(job: unknown): void;
    returnNextConcurrencyFreeJob(status: Record<string, { running: number }>, handled: unknown[]): { attrs: { _id: string } } | undefined;
  };
};

test("the in-place search picks the job Agenda's own search picks", (t) => {
  const definitions = { a: { concurrency: 2 }, b: { concurrency: 0 }, c: { concurrency: 5 } };
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  let compared = 0;
  let found = 0;
  for (let round = 0; round < 300; round++) {
    const agenda = { definitions };
    const original = new JobProcessingQueue(agenda);
    const patched = new JobProcessingQueue(agenda);
    const ids: string[] = [];
    for (let i = 0, n = random(12); i < n; i++) {
      const job = {
        attrs: {
          _id: `j${i}`,
          name: ["a", "b", "c", "undefined-name"][random(4)],
          nextRunAt: new Date(1000 * random(3)),
          priority: random(2),
        },
      };
      original.insert(job);
      patched.insert(job);
      ids.push(job.attrs._id);
    }
    searchQueueInPlace({ jobProcessor: { jobQueue: patched } } as unknown as Agenda);
    const status = { a: { running: random(4) }, c: { running: random(7) } };
    const handled = ids.filter(() => random(3) === 0);
    const expected = original.returnNextConcurrencyFreeJob(status, handled);
    t.is(patched.returnNextConcurrencyFreeJob(status, handled), expected);
    compared++;
    if (expected) found++;
  }
  // Both outcomes were exercised: a job found, and none free.
  t.true(found > 50 && found < compared - 50, `found ${found} of ${compared}`);
});

test("an Agenda without that queue is left alone", (t) => {
  const agenda = { jobProcessor: undefined };
  searchQueueInPlace(agenda as unknown as Agenda);
  t.deepEqual(agenda, { jobProcessor: undefined });
});
