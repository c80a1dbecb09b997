/**
 * Gathers the calls made during one turn of the event loop into one batch:
 * under load, the deliveries whose responses arrived together share one
 * database round trip (and one commit) instead of paying one each. The
 * first call schedules the flush with setImmediate, so a lone call waits for
 * no timer.
 *
 * `run` answers the inputs in order. If a batch of several fails, each input
 * is tried alone, so one bad row fails only its own call.
 */
export class Coalescer<I, O> {
  #pending: Array<{ input: I; resolve: (output: O) => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;

  constructor(
    private readonly run: (inputs: I[]) => Promise<O[]>,
    private readonly maxBatch = 256,
  ) {}

  call(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ input, resolve, reject });
      if (this.#pending.length >= this.maxBatch) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#flush();
        });
      }
    });
  }

  #flush(): void {
    const batch = this.#pending.splice(0);
    if (batch.length === 0) return;
    this.run(batch.map((call) => call.input)).then(
      (outputs) => {
        for (const [i, call] of batch.entries()) call.resolve(outputs[i] as O);
      },
      (error: unknown) => {
        if (batch.length === 1) (batch[0] as (typeof batch)[0]).reject(error);
        else for (const call of batch) this.run([call.input]).then((outputs) => call.resolve(outputs[0] as O), call.reject);
      },
    );
  }
}
