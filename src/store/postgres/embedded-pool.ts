import { join } from "node:path";
import type { QueryConfig, QueryResult, QueryResultRow } from "pg";
import { EmbeddedConnection } from "./embedded-connection.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";

/**
 * PGlite (PostgreSQL compiled to WebAssembly) under `dataDir`, in this
 * process but in a thread of its own (embedded-connection.ts), behind the
 * pool interface the SQL adapters use: the same `pg` client code runs
 * embedded and against a server, through PGlite's own node-postgres
 * connection (no socket, no second protocol hop).
 *
 * PGlite is one session, so this is one client and one statement at a
 * time. Statements go to the thread as they are asked for, and it runs them
 * in that order, each as soon as the one before is done (no round trip
 * between threads in between). A transaction (`connect()` … `release()`)
 * has the session to itself: what is asked for meanwhile waits for its
 * release; a client released as broken has its transaction rolled back
 * before the next one runs. A refused statement leaves the client as it was (a
 * pool of pg's would throw the connection away, and the next client on the
 * same session would find the last one's prepared statements and pending
 * messages in its way); there is no connection to lose.
 *
 * PGlite runs no autovacuum: a table whose rows come and go (the delivery
 * jobs: each inserted, locked and deleted) would grow by every row it ever
 * held, ~400 bytes a job, never reused. With `vacuumEveryMs` the pool runs
 * VACUUM that often, in its turn like any statement (a few ms with little
 * to do, ~20 ms after 25,000 jobs came and went).
 */
export class EmbeddedPool implements SqlPool {
  /** Resolves when the next statement or transaction may be sent: those before it are sent, a transaction released. */
  #turn: Promise<void> = Promise.resolve();
  /** Transactions held or waiting, and statements waiting behind them: while there are none, a statement is sent at once. */
  #queued = 0;
  #closed = false;
  #vacuum: NodeJS.Timeout | undefined;

  private constructor(private readonly client: EmbeddedConnection) {}

  /**
   * Opens (or creates) the database under `dataDir` and applies `settings` (e.g. `enable_seqscan=off`) to its
   * session; with `vacuumEveryMs`, vacuums it that often. `onError` hears of a failed VACUUM, a failed session and a
   * stopped database thread.
   */
  static async open(
    dataDir: string,
    settings: readonly string[],
    onError: (error: Error) => void,
    options: { vacuumEveryMs?: number } = {},
  ): Promise<EmbeddedPool> {
    const client = await EmbeddedConnection.start({ directory: join(dataDir, "pglite"), settings }, onError);
    const pool = new EmbeddedPool(client);
    if (options.vacuumEveryMs !== undefined) pool.#vacuumEvery(options.vacuumEveryMs, onError);
    return pool;
  }

  #vacuumEvery(ms: number, onError: (error: Error) => void): void {
    let running = false;
    this.#vacuum = setInterval(() => {
      // One at a time: a VACUUM still waiting for its turn is not queued again (end() stops the timer first).
      if (running) return;
      running = true;
      this.query("VACUUM")
        .catch((error: Error) => {
          if (!this.#closed) onError(error);
        })
        .finally(() => {
          running = false;
        });
    }, ms);
    this.#vacuum.unref();
  }

  query<R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]): Promise<QueryResult<R>> {
    if (this.#queued === 0 && !this.#closed) return this.client.query<R>(config, values);
    return this.#inTurn(() => this.client.query<R>(config, values));
  }

  async connect(): Promise<SqlClient> {
    let done: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      done = resolve;
    });
    const previous = this.#turn;
    this.#turn = previous.then(() => held);
    this.#queued++;
    const release = () => {
      this.#queued--;
      done();
    };
    await previous;
    if (this.#closed) {
      release();
      throw new Error("the embedded database is closed");
    }
    let released = false;
    return {
      query: <R extends QueryResultRow>(config: string | QueryConfig, values?: unknown[]) => this.client.query<R>(config, values),
      release: (broken?: boolean | Error) => {
        if (released) return;
        released = true;
        // Whatever its holder left open ends here, sent before the next turn's statements (outside a transaction it does nothing).
        if (broken) this.client.query("ROLLBACK").catch(() => {});
        release();
      },
    };
  }

  async end(): Promise<void> {
    clearInterval(this.#vacuum);
    await this.#inTurn(() => {
      this.#closed = true;
      return this.client.close();
    });
  }

  /**
   * Sends what `send` sends once the transactions and statements before it
   * are on their way (a transaction: released), and resolves with its answer.
   */
  async #inTurn<T>(send: () => Promise<T>): Promise<T> {
    const previous = this.#turn;
    let done: () => void = () => {};
    this.#turn = new Promise<void>((resolve) => {
      done = resolve;
    });
    this.#queued++;
    await previous;
    let answer: Promise<T>;
    try {
      answer = this.#closed ? Promise.reject(new Error("the embedded database is closed")) : send();
    } finally {
      this.#queued--;
      done();
    }
    return answer;
  }
}
