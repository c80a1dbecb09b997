/**
 * Gathers concurrent calls into one batch: under load, the deliveries that
 * reach the same step together share one database round trip (and one
 * commit) instead of paying one each.
 *
 * A call waits for the end of the current turn of the event loop, so the
 * calls of that turn go together, and, while a batch is in flight, for its
 * answer: the calls that gathered meanwhile go next, as one. Under load the
 * batches grow by themselves; a lone call waits for no timer.
 *
 * `run` answers the inputs in order. If a batch of several fails with an
 * error `splitOn` accepts (bad data, not a lost connection, where a retry
 * could repeat a write that happened), each input is tried alone, in order,
 * one after another, so one bad row fails only its own call.
 */
const DEFAULT_MAX_BATCH = 256;

export class Coalescer<I, O> {
  #pending: Array<{ input: I; resolve: (output: O) => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;
  #inFlight = false;
  readonly #maxBatch: number;

  constructor(
    private readonly run: (inputs: I[]) => Promise<O[]>,
    private readonly options: { maxBatch?: number; splitOn?: (error: unknown) => boolean } = {},
  ) {
    this.#maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
  }

  call(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ input, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight || this.#pending.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    const batch = this.#pending.splice(0, this.#maxBatch);
    if (batch.length === 0) return;
    this.#inFlight = true;
    const run = (inputs: I[]) => Promise.resolve().then(() => this.run(inputs));
    const settled = run(batch.map((call) => call.input)).then(
      (outputs) => {
        for (const [i, call] of batch.entries()) call.resolve(outputs[i] as O);
      },
      async (error: unknown) => {
        if (batch.length === 1 || !this.options.splitOn?.(error)) {
          for (const call of batch) call.reject(error);
          return;
        }
        // One after another, as they came: a caller that relies on its inputs' order (the live feed's messages) keeps it.
        for (const call of batch) await run([call.input]).then((outputs) => call.resolve(outputs[0] as O), call.reject);
      },
    );
    void settled.finally(() => {
      this.#inFlight = false;
      if (this.#pending.length >= this.#maxBatch) this.#flush();
      else this.#schedule();
    });
  }
}
