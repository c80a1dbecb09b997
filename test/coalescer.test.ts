import test from "ava";
import { Coalescer } from "../src/coalescer.js";

test("calls made in one turn share one run, each answered in order", async (t) => {
  const runs: number[][] = [];
  const doubler = new Coalescer(async (inputs: number[]) => {
    runs.push(inputs);
    return inputs.map((n) => n * 2);
  });
  t.deepEqual(await Promise.all([1, 2, 3].map((n) => doubler.call(n))), [2, 4, 6]);
  t.deepEqual(runs, [[1, 2, 3]]);
  // A lone call later is its own batch, and waits for no timer.
  t.is(await doubler.call(5), 10);
  t.deepEqual(runs.at(-1), [5]);
});

test("a batch is cut at its size limit", async (t) => {
  const sizes: number[] = [];
  const echo = new Coalescer(
    async (inputs: number[]) => {
      sizes.push(inputs.length);
      return inputs;
    },
    { maxBatch: 4 },
  );
  const outputs = await Promise.all(Array.from({ length: 10 }, (_, i) => echo.call(i)));
  t.deepEqual(outputs, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.deepEqual(sizes, [4, 4, 2]);
});

test("when a shared run fails with bad data, each input is tried alone: only the bad one fails", async (t) => {
  const runs: string[][] = [];
  const upper = new Coalescer(
    async (inputs: string[]) => {
      runs.push(inputs);
      if (inputs.includes("bad")) throw new Error("bad input");
      return inputs.map((s) => s.toUpperCase());
    },
    { splitOn: (error) => (error as Error).message === "bad input" },
  );
  const results = await Promise.allSettled(["a", "bad", "c"].map((s) => upper.call(s)));
  t.deepEqual(
    results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message)),
    ["A", "bad input", "C"],
  );
  t.deepEqual(runs, [["a", "bad", "c"], ["a"], ["bad"], ["c"]]);
});

test("after a shared run fails with bad data, the inputs tried alone run one after another, in order", async (t) => {
  const finished: string[] = [];
  let running = 0;
  let overlapped = false;
  const slow = new Coalescer(
    async (inputs: string[]) => {
      if (inputs.includes("bad") && inputs.length > 1) throw new Error("bad input");
      running++;
      overlapped ||= running > 1;
      // The first takes longest: run side by side, the others would finish before it.
      await new Promise((resolve) => setTimeout(resolve, inputs[0] === "a" ? 30 : 1));
      running--;
      finished.push(...inputs);
      return inputs;
    },
    { splitOn: (error) => (error as Error).message === "bad input" },
  );
  await Promise.allSettled(["a", "bad", "c"].map((s) => slow.call(s)));
  t.false(overlapped);
  t.deepEqual(finished, ["a", "bad", "c"]);
});

test("any other failure fails the whole batch once, without retries that could repeat a write", async (t) => {
  let runs = 0;
  const flaky = new Coalescer(async (inputs: number[]) => {
    runs++;
    if (runs === 1) throw new Error("connection lost");
    if (runs === 2) throw "not even an Error";
    return inputs;
  });
  const first = await Promise.allSettled([1, 2, 3].map((n) => flaky.call(n)));
  t.deepEqual(
    first.map((r) => r.status),
    ["rejected", "rejected", "rejected"],
  );
  t.is(runs, 1);
  t.is(await flaky.call(4).catch((reason: unknown) => reason), "not even an Error");
  // It keeps working after failures.
  t.is(await flaky.call(5), 5);
});

test("a run that throws before returning a promise fails its calls, not the process", async (t) => {
  let calls = 0;
  const broken = new Coalescer((inputs: number[]): Promise<number[]> => {
    calls++;
    if (calls === 1) throw new Error("thrown synchronously");
    return Promise.resolve(inputs);
  });
  await t.throwsAsync(broken.call(1), { message: "thrown synchronously" });
  t.is(await broken.call(2), 2);
});
