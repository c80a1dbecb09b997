import { Worker } from "node:worker_threads";
import type { QueryConfig, QueryResult, QueryResultRow } from "pg";
import { errorFrom, type FromThread, type ThreadOptions, type ToThread } from "./embedded-protocol.js";

/** The thread's script, beside this file: TypeScript when this runs from source (tests, `npm run dev`), else the build's JavaScript. */
const THREAD_SCRIPT = new URL(import.meta.url.endsWith(".ts") ? "./embedded-thread.ts" : "./embedded-thread.js", import.meta.url);

/**
 * The thread's young generation: its JavaScript is pg's client and PGlite's
 * glue, whose objects live for one statement. V8's flags are the process's,
 * and the service's `--max-semi-space-size=32` would let this heap, too,
 * commit tens of MB it has no use for.
 */
const THREAD_YOUNG_GENERATION_MB = 8;

/**
 * A worker running `script`. tsx's loader, registered in this thread by
 * `--import tsx`, does not reach a worker's entry point
 * (privatenumber/tsx#354): a TypeScript script's thread registers it first.
 */
function startThread(script: URL, options: ThreadOptions): Worker {
  const settings = { workerData: options, resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB } };
  if (!script.pathname.endsWith(".ts")) return new Worker(script, settings);
  const tsx = import.meta.resolve("tsx/esm/api");
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(script.href)}); });`;
  return new Worker(bootstrap, { ...settings, eval: true });
}

/** The thread's first message: "ready", or why it could not open the database. */
function firstMessage(thread: Worker): Promise<FromThread> {
  return new Promise((resolve, reject) => {
    const settle = (finish: () => void) => {
      thread.off("message", onMessage).off("error", onError).off("exit", onExit);
      finish();
    };
    const onMessage = (message: FromThread) => settle(() => resolve(message));
    const onError = (error: Error) => settle(() => reject(error));
    const onExit = (code: number) =>
      settle(() => reject(new Error(`the embedded database's thread ended while opening it (exit code ${code})`)));
    thread.on("message", onMessage).on("error", onError).on("exit", onExit);
  });
}

interface Waiting {
  resolve(result: QueryResult): void;
  reject(error: Error): void;
}

/**
 * The embedded database's one session, run in a thread of its own
 * (embedded-thread.ts): `query` sends a statement there and resolves with
 * its rows, or rejects with its error (`code`, `detail`… as pg gives them).
 * It runs statements in the order they are sent and holds no turns: that is
 * the pool's work (embedded-pool.ts).
 *
 * Modes: OPEN (statements go to the thread) → CLOSING (`close()` asked the
 * thread to close the database; nothing more is sent) → CLOSED (the thread
 * has ended). From OPEN or CLOSING the thread may also end by itself (an
 * uncaught error, memory exhausted): STOPPED, every statement waiting and
 * every later one rejected with why (and `close()` resolves). The thread holds the process open only
 * while a statement waits for it.
 */
export class EmbeddedConnection {
  #mode: "open" | "closing" | "closed" | "stopped" = "open";
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 0;
  #stoppedBecause: Error | undefined;
  #lastError: Error | undefined;
  #closeFailure: Error | undefined;
  readonly #ended: Promise<void>;

  private constructor(
    private readonly thread: Worker,
    onBroken: (error: Error) => void,
  ) {
    thread.on("message", (message: FromThread) => this.#receive(message, onBroken));
    thread.on("error", (error) => {
      this.#lastError = error;
    });
    this.#ended = new Promise((resolve) => {
      thread.once("exit", (exitCode) => {
        if (this.#mode === "closing" && !this.#lastError) this.#mode = "closed";
        else this.#stop(exitCode, onBroken);
        resolve();
      });
    });
    thread.unref();
  }

  /**
   * Starts the thread, which opens (or creates) the database in
   * `options.directory`; resolves once it answers statements. `onBroken`
   * hears of a session that failed or a thread that stopped after that.
   * `script` is the thread's (another only in tests).
   */
  static async start(options: ThreadOptions, onBroken: (error: Error) => void, script = THREAD_SCRIPT): Promise<EmbeddedConnection> {
    const thread = startThread(script, options);
    const opened = await firstMessage(thread);
    if (opened.kind !== "ready") {
      await thread.terminate();
      throw opened.kind === "failed"
        ? errorFrom(opened.error)
        : new Error(`the embedded database's thread said ${opened.kind} instead of ready`);
    }
    return new EmbeddedConnection(thread, onBroken);
  }

  query<R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>> {
    if (this.#mode === "stopped") return Promise.reject(this.#stoppedBecause);
    if (this.#mode !== "open") return Promise.reject(new Error("the embedded database is closed"));
    const id = this.#nextId++;
    const result = new Promise<QueryResult<R>>((resolve, reject) => {
      this.#waiting.set(id, { resolve: resolve as (result: QueryResult) => void, reject });
    });
    if (this.#waiting.size === 1) this.thread.ref();
    this.#send({ kind: "query", id, config, values });
    return result;
  }

  /** Closes the database (after the statements already sent) and ends the thread; rejects if closing the database failed. */
  async close(): Promise<void> {
    if (this.#mode === "open") {
      this.#mode = "closing";
      this.thread.ref();
      this.#send({ kind: "close" });
    }
    await this.#ended;
    if (this.#closeFailure) throw this.#closeFailure;
  }

  #send(message: ToThread): void {
    this.thread.postMessage(message);
  }

  #receive(message: FromThread, onBroken: (error: Error) => void): void {
    switch (message.kind) {
      case "rows":
        this.#settle(message.id)?.resolve({ command: message.command, rowCount: message.rowCount, rows: message.rows, oid: 0, fields: [] });
        return;
      case "refused":
        this.#settle(message.id)?.reject(errorFrom(message.error));
        return;
      case "broken":
        onBroken(errorFrom(message.error));
        return;
      case "failed":
        // Closing the database failed: the thread ends after saying so.
        this.#closeFailure = errorFrom(message.error);
        return;
      case "ready":
      case "closed":
        return;
    }
  }

  #settle(id: number): Waiting | undefined {
    const waiting = this.#waiting.get(id);
    this.#waiting.delete(id);
    if (this.#waiting.size === 0 && this.#mode === "open") this.thread.unref();
    return waiting;
  }

  #stop(exitCode: number, onBroken: (error: Error) => void): void {
    const why = this.#lastError ? `: ${this.#lastError.message}` : ` (exit code ${exitCode})`;
    this.#stoppedBecause = new Error(`the embedded database's thread stopped${why}`, { cause: this.#lastError });
    this.#mode = "stopped";
    for (const waiting of this.#waiting.values()) waiting.reject(this.#stoppedBecause);
    this.#waiting.clear();
    onBroken(this.#stoppedBecause);
  }
}
