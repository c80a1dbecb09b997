import { join } from "node:path";
import pg, { type QueryConfig, type QueryResult, type QueryResultRow } from "pg";
import { EmbeddedThread } from "./embedded-thread.js";
import { vacuumRound } from "./embedded-vacuum.js";
import type { SqlClient, SqlPool } from "./sql-pool.js";

/**
 * PGlite (PostgreSQL compiled to WebAssembly) under `dataDir`, in this
 * process on a thread of its own, behind the pool interface the SQL adapters
 * use: the same `pg` client code runs embedded and against a server,
 * speaking the wire protocol to the thread instead of a socket (see
 * embedded-thread.ts). PostgreSQL's work runs there, beside the event loop
 * rather than on it.
 *
 * PGlite is one session, so this is one client and one statement at a
 * time: a statement or a transaction (`connect()` … `release()`) waits for
 * the one before it; a client released as broken has its transaction rolled
 * back before the next one runs. A refused statement leaves the client as it was (a
 * pool of pg's would throw the connection away, and the next client on the
 * same session would find the last one's prepared statements and pending
 * messages in its way). Only the thread failing ends the session, as a lost
 * connection would end a server's; `onError` hears of it.
 *
 * `bookkeeping` is the same session for delivery bookkeeping, whose commits
 * do not wait for the disk (`synchronous_commit=off`): the session's
 * setting is switched, between statements, to what the next one's side
 * asks for. An asynchronous commit's WAL reaches the disk with the next
 * commit that waits for it (the WAL is flushed in order), or a checkpoint,
 * or the checkpoint of a clean close; there is no WAL writer to flush it
 * meanwhile. See docs/durability.md for what a crash can lose of it.
 *
 * PGlite runs no autovacuum: a table whose rows come and go (the delivery
 * jobs: each inserted, locked and deleted) would grow by every row it ever
 * held, ~400 bytes a job, never reused. With `vacuumEveryMs` the pool runs
 * a round of VACUUM that often (embedded-vacuum.ts), each statement in its
 * turn like any other.
 */
export class EmbeddedPool implements SqlPool {
  /** Resolves when the statement or transaction before the next one is done. */
  #turn: Promise<void> = Promise.resolve();
  #closed = false;
  #vacuum: NodeJS.Timeout | undefined;
  /** The session's synchronous_commit: on (PostgreSQL's default) until a bookkeeping turn turns it off. */
  #synchronousCommit = true;

  /** The same session, for delivery bookkeeping: its commits do not wait for the disk (see above). */
  readonly bookkeeping: SqlPool = {
    query: <R extends QueryResultRow = QueryResultRow>(config: string | QueryConfig, values?: unknown[]) =>
      this.#inTurn(() => this.client.query<R>(config as QueryConfig, values), false),
    connect: () => this.#connect(false),
  };

  private constructor(
    private readonly thread: EmbeddedThread,
    private readonly client: pg.Client,
  ) {}

  /**
   * Opens (or creates) the database under `dataDir` and applies `settings` (e.g. `enable_seqscan=off`) to its
   * session; with `vacuumEveryMs`, vacuums it that often (a failure goes to `onError`).
   */
  static async open(
    dataDir: string,
    settings: readonly string[],
    onError: (error: Error) => void,
    options: { vacuumEveryMs?: number } = {},
  ): Promise<EmbeddedPool> {
    const thread = await EmbeddedThread.start(join(dataDir, "pglite"));
    const client = new pg.Client({ stream: () => thread.socket, user: "postgres", database: "postgres" });
    client.on("error", onError);
    try {
      await client.connect();
      for (const setting of settings) await client.query(`SET ${setting}`);
    } catch (error) {
      await client.end().catch(() => {});
      await thread.close();
      throw error;
    }
    const pool = new EmbeddedPool(thread, client);
    if (options.vacuumEveryMs !== undefined) pool.#vacuumEvery(options.vacuumEveryMs, onError);
    return pool;
  }

  #vacuumEvery(ms: number, onError: (error: Error) => void): void {
    let running = false;
    let round = 0;
    this.#vacuum = setInterval(() => {
      // One round at a time: a round still under way is not started again (end() stops the timer first).
      if (running) return;
      running = true;
      vacuumRound((text) => this.query(text), round++)
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
    return this.#inTurn(() => this.client.query<R>(config as QueryConfig, values), true);
  }

  connect(): Promise<SqlClient> {
    return this.#connect(true);
  }

  async #connect(synchronousCommit: boolean): Promise<SqlClient> {
    let done: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      done = resolve;
    });
    const previous = this.#turn;
    this.#turn = previous.then(() => held);
    await previous;
    try {
      if (this.#closed) throw new Error("the embedded database is closed");
      await this.#commitSynchronously(synchronousCommit);
    } catch (error) {
      done();
      throw error;
    }
    let released = false;
    return {
      query: <R extends QueryResultRow>(config: string | QueryConfig, values?: unknown[]) =>
        this.client.query<R>(config as QueryConfig, values),
      release: (broken?: boolean | Error) => {
        if (released) return;
        released = true;
        // Whatever its holder left open ends here, before the next turn begins (outside a transaction this does nothing).
        if (broken) void this.client.query("ROLLBACK").then(done, done);
        else done();
      },
    };
  }

  async end(): Promise<void> {
    clearInterval(this.#vacuum);
    await this.#inTurn(async () => {
      this.#closed = true;
      await this.client.end();
      await this.thread.close();
    });
  }

  /** Sets the session's synchronous_commit to `on` (true) or off, unless it is so already (outside any transaction: it stays). */
  async #commitSynchronously(on: boolean): Promise<void> {
    if (this.#synchronousCommit === on) return;
    await this.client.query(`SET synchronous_commit = ${on ? "on" : "off"}`);
    this.#synchronousCommit = on;
  }

  /** Runs `run` once the turns before it are done, with synchronous_commit `synchronousCommit` (ending runs it as it is). */
  async #inTurn<T>(run: () => Promise<T>, synchronousCommit?: boolean): Promise<T> {
    const previous = this.#turn;
    let done: () => void = () => {};
    this.#turn = new Promise<void>((resolve) => {
      done = resolve;
    });
    await previous;
    try {
      if (this.#closed) throw new Error("the embedded database is closed");
      if (synchronousCommit !== undefined) await this.#commitSynchronously(synchronousCommit);
      return await run();
    } finally {
      done();
    }
  }
}
