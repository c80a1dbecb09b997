import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import Fastify from "fastify";
import { expressReceiver } from "../../packages/receiver/src/adapters/express.js";
import { fastifyReceiver } from "../../packages/receiver/src/adapters/fastify.js";
import type { ErrorContext, ReceiverOptions, VerifiedNotification } from "../../packages/receiver/src/index.js";
import { httpReceiver } from "../../packages/receiver/src/index.js";
import type { ReceivedRequest } from "./receiver.js";

export const ADAPTERS = ["http", "express", "fastify"] as const;
export type AdapterName = (typeof ADAPTERS)[number];

export const PATH = "/baseWebhookNotification";

/** What the SDK receiver saw: each handler call, each error it reported. */
export interface SdkReceiver {
  url: string;
  port: number;
  /** Every call of onNotification, in order, including calls whose handler then threw. */
  calls: VerifiedNotification[];
  /** The http adapter's requests as they arrived, raw, for replays (empty for the other adapters). */
  requests: ReceivedRequest[];
  errors: Array<{ error: unknown; context: ErrorContext }>;
  /** Resolves once `predicate` holds; re-checked after every handler call and error; rejects after `timeoutMs`. */
  waitUntil(predicate: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export type SdkReceiverOptions = Omit<ReceiverOptions, "onNotification" | "onError"> & {
  /** Runs inside onNotification after the call is recorded; throw to fail the job. */
  onNotification?: (notification: VerifiedNotification) => unknown;
  maxBodyBytes?: number;
  /** Listen on this port (a restart on the same URL); default a free one. */
  port?: number;
};

/**
 * The SDK's adapter of that name as a real server on 127.0.0.1, mounted the
 * way its README says, next to a JSON route of the same app (Express,
 * Fastify) so the raw-body handling is shown to leave the app's parsing alone.
 */
export async function startSdkReceiver(adapter: AdapterName, options: SdkReceiverOptions): Promise<SdkReceiver> {
  const { onNotification, port = 0, ...rest } = options;
  const calls: VerifiedNotification[] = [];
  const errors: SdkReceiver["errors"] = [];
  const requests: ReceivedRequest[] = [];
  let waiters: Array<() => void> = [];
  const wake = () => {
    for (const waiter of waiters.splice(0)) waiter();
  };
  const receiverOptions = {
    ...rest,
    async onNotification(notification: VerifiedNotification) {
      calls.push(notification);
      wake();
      await onNotification?.(notification);
    },
    onError(error: unknown, context: ErrorContext) {
      errors.push({ error, context });
      wake();
    },
  };

  let close: () => Promise<void>;
  let listening: number;
  if (adapter === "fastify") {
    const app = Fastify();
    app.post("/json", async (request) => ({ parsed: request.body }));
    await app.register(fastifyReceiver, { prefix: PATH, ...receiverOptions });
    await app.listen({ port, host: "127.0.0.1" });
    listening = (app.server.address() as AddressInfo).port;
    close = () => app.close();
  } else {
    let server: Server;
    if (adapter === "express") {
      const app = express();
      app.post(PATH, expressReceiver(receiverOptions));
      app.use(express.json());
      app.post("/json", (request, response) => {
        response.json({ parsed: request.body });
      });
      server = createServer(app);
    } else {
      const listener = httpReceiver(receiverOptions);
      server = createServer((request, response) => {
        // A second reader of the same stream: the adapter attaches its own in this tick.
        const chunks: Buffer[] = [];
        request.on("data", (chunk: Buffer) => chunks.push(chunk));
        request.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          requests.push({ method: request.method ?? "", path: request.url ?? "", headers: request.headers, body, at: Date.now() });
        });
        listener(request, response);
      });
    }
    await new Promise<void>((resolve, reject) => {
      // A restart on the same port that another socket took meanwhile fails the test, not the process.
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    listening = (server.address() as AddressInfo).port;
    close = async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    };
  }

  return {
    url: `http://127.0.0.1:${listening}${PATH}`,
    port: listening,
    calls,
    requests,
    errors,
    async waitUntil(predicate, what, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`${adapter} receiver: ${what} did not happen within ${timeoutMs} ms (${calls.length} calls)`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    async close() {
      waiters = [];
      await close();
    },
  };
}

/** Sends a captured delivery again, byte for byte, with its headers (changed by `override`). */
export async function replay(
  url: string,
  delivery: ReceivedRequest,
  override: { body?: string; headers?: Record<string, string | undefined> } = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string | undefined> = {
    "content-type": "application/json",
    "x-signature": delivery.headers["x-signature"] as string,
    "x-jobid": delivery.headers["x-jobid"] as string,
    "x-jobattempt": delivery.headers["x-jobattempt"] as string,
    ...override.headers,
  };
  const sent = Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const response = await fetch(url, { method: "POST", headers: sent, body: override.body ?? delivery.body });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {}
  return { status: response.status, json };
}
