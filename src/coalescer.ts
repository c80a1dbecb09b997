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
 * `run` answers the inputs in order. If a batch of several fails, each input
 * is tried alone, so one bad row fails only its own call.
 */
export class Coalescer<I, O> {
  #pending: Array<{ input: I; resolve: (output: O) => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;
  #inFlight = false;

  constructor(
    private readonly run: (inputs: I[]) => Promise<O[]>,
    private readonly maxBatch = 256,
  ) {}

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
    const batch = this.#pending.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    this.#inFlight = true;
    const settled = this.run(batch.map((call) => call.input)).then(
      (outputs) => {
        for (const [i, call] of batch.entries()) call.resolve(outputs[i] as O);
      },
      async (error: unknown) => {
        if (batch.length === 1) {
          (batch[0] as (typeof batch)[0]).reject(error);
          return;
        }
        await Promise.all(batch.map((call) => this.run([call.input]).then((outputs) => call.resolve(outputs[0] as O), call.reject)));
      },
    );
    void settled.finally(() => {
      this.#inFlight = false;
      if (this.#pending.length >= this.maxBatch) this.#flush();
      else this.#schedule();
    });
  }
}
