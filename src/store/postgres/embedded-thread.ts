import { Duplex } from "node:stream";
import type { Worker } from "node:worker_threads";
import { startModuleWorker } from "../../module-worker.js";
import { outcome } from "../../outcome.js";
import { type EmbeddedThreadData, type FromEmbeddedThread, joined, type ToEmbeddedThread } from "./embedded-thread-messages.js";

/**
 * The database thread's young generation, in MB (V8 makes its semi-spaces a
 * third of it). What that thread allocates in JavaScript is short-lived (the
 * wire messages it passes on): V8's default, sized for a whole process,
 * would commit memory there for nothing.
 */
const DATABASE_THREAD_YOUNG_GENERATION_MB = 12;

/**
 * The embedded database on its own thread (embedded-worker.ts), and the
 * stream a `pg` client talks to it through in place of a socket: what the
 * client writes goes to the thread, what the thread answers comes back as
 * the stream's data. The thread giving up (or stopping unasked) destroys
 * the stream with the reason, as a lost connection would.
 *
 * The thread keeps the process alive, as a connection to a server does,
 * until `close()`.
 */
export class EmbeddedThread {
  readonly socket: WorkerSocket;
  readonly #worker: Worker;
  /** Settles as the thread opens its database, or fails to. */
  readonly #ready = outcome();
  /** Settles as the thread closes its database, or fails to, or stops. */
  readonly #closed = outcome();
  #closing = false;

  private constructor(directory: string) {
    const workerData: EmbeddedThreadData = { directory };
    const worker = startModuleWorker(new URL("./embedded-worker.js", import.meta.url), import.meta.url, {
      workerData,
      resourceLimits: { maxYoungGenerationSizeMb: DATABASE_THREAD_YOUNG_GENERATION_MB },
    });
    this.#worker = worker;
    this.socket = new WorkerSocket(worker);
    let opened = false;
    const gaveUp = (error: Error) => {
      if (!opened) this.#ready.settle(error);
      else if (this.#closing) this.#closed.settle(error);
      else this.socket.destroy(error);
    };
    worker.on("message", (message: FromEmbeddedThread) => {
      if (message.kind === "bytes") this.socket.push(Buffer.from(message.bytes.buffer, message.bytes.byteOffset, message.bytes.byteLength));
      else if (message.kind === "ready") {
        opened = true;
        this.#ready.settle();
      } else if (message.kind === "closed") this.#closed.settle();
      else gaveUp(new Error(message.message));
    });
    worker.on("error", gaveUp);
    worker.on("exit", (code) => {
      // After "closed" (or a failure already told) this changes nothing: a promise settles once.
      gaveUp(new Error(`the embedded database's thread stopped (exit code ${code})`));
      // A thread that stopped unasked was reported as a lost connection: there is nothing left to close.
      this.#closed.settle();
    });
  }

  /** Starts the thread and opens the database under `directory` there; rejects with why it could not. */
  static async start(directory: string): Promise<EmbeddedThread> {
    const thread = new EmbeddedThread(directory);
    try {
      await thread.#ready.promise;
    } catch (error) {
      await thread.#worker.terminate();
      throw error;
    }
    return thread;
  }

  /**
   * Closes the database, after whatever was written before, and ends the
   * thread; rejects if closing failed. Calling it again answers the same.
   */
  async close(): Promise<void> {
    if (!this.#closing) {
      this.#closing = true;
      const close: ToEmbeddedThread = { kind: "close" };
      this.#worker.postMessage(close);
    }
    try {
      await this.#closed.promise;
    } finally {
      await this.#worker.terminate();
    }
  }
}

/** The socket-shaped side of the thread that `pg`'s connection uses (see EmbeddedThread). */
class WorkerSocket extends Duplex {
  constructor(private readonly worker: Worker) {
    super();
  }

  /** The database is open before a client gets this stream: connected at once. */
  connect(): this {
    process.nextTick(() => this.emit("connect"));
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  ref(): this {
    this.worker.ref();
    return this;
  }

  unref(): this {
    this.worker.unref();
    return this;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#send([chunk]);
    callback();
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    this.#send(chunks.map(({ chunk }) => chunk));
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    // The client is done: nothing more will be answered to it.
    this.push(null);
    callback();
  }

  override _read(): void {}

  /** A buffer of its own, handed over: a slice of Node's shared buffer pool would be copied whole. */
  #send(chunks: Buffer[]): void {
    const message: ToEmbeddedThread = { kind: "bytes", bytes: joined(chunks) };
    this.worker.postMessage(message, [message.bytes.buffer as ArrayBuffer]);
  }
}
