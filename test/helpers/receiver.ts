import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestFn } from "ava";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes as sent, decoded as UTF-8. */
  body: string;
  at: number;
  /** The status this receiver answered with. */
  status?: number;
}

export type Responder = (request: ReceivedRequest) => { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

/** A real HTTP receiver on 127.0.0.1 recording every notification. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  respond: Responder = () => ({ status: 200, body: "ok" });
  #server: Server;
  #waiters: Array<() => void> = [];

  private constructor(server: Server) {
    this.#server = server;
  }

  /** Listens on `port` (0: any free one). */
  static async start(respond?: Responder, port = 0): Promise<Receiver> {
    const receiver = Receiver.#unstarted(respond);
    await receiver.#listen(port);
    return receiver;
  }

  /** One receiver for all of a test file's tests: listening before they run (a `before` hook), closed after. */
  static shared(test: TestFn, respond?: Responder): Receiver {
    const receiver = Receiver.#unstarted(respond);
    test.before(() => receiver.#listen(0));
    test.after.always(() => receiver.close());
    return receiver;
  }

  static #unstarted(respond?: Responder): Receiver {
    const receiver: Receiver = new Receiver(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (chunk: Buffer) => chunks.push(chunk));
        req.on("end", () => {
          const request: ReceivedRequest = {
            method: req.method ?? "",
            path: req.url ?? "",
            headers: req.headers,
            body: Buffer.concat(chunks).toString("utf8"),
            at: Date.now(),
          };
          receiver.requests.push(request);
          const answer = receiver.respond(request);
          request.status = answer.status;
          const reply = () => {
            res.writeHead(answer.status, answer.headers);
            res.end(answer.body ?? "");
            for (const wake of receiver.#waiters.splice(0)) wake();
          };
          if (answer.delayMs) setTimeout(reply, answer.delayMs);
          else reply();
        });
      }),
    );
    if (respond) receiver.respond = respond;
    return receiver;
  }

  #listen(port: number): Promise<void> {
    return new Promise<void>((resolve) => this.#server.listen(port, "127.0.0.1", resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/baseWebhookNotification`;
  }

  /** Resolves once `count` requests arrived; rejects after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = 20_000): Promise<ReceivedRequest[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`receiver got ${this.requests.length} of ${count} requests within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.requests.slice(0, count);
  }

  /** Resolves with the first request carrying this X-JobId; rejects after `timeoutMs`. */
  waitForJob(jobId: string, timeoutMs = 20_000): Promise<ReceivedRequest> {
    return this.waitForRequest((request) => request.headers["x-jobid"] === jobId, `job ${jobId}`, timeoutMs);
  }

  /** Resolves with the first request that `matches`; rejects after `timeoutMs`. */
  async waitForRequest(matches: (request: ReceivedRequest) => boolean, what: string, timeoutMs = 20_000): Promise<ReceivedRequest> {
    const deadline = Date.now() + timeoutMs;
    for (let seen = 0; ; seen = this.requests.length) {
      const found = this.requests.find(matches);
      if (found) return found;
      await this.waitFor(seen + 1, Math.max(1, deadline - Date.now())).catch(() => {
        throw new Error(`receiver got no request for ${what} within ${timeoutMs} ms`);
      });
    }
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
