/**
 * What the three peer baselines share: what a team builds instead of the
 * service, around a job queue. A publish (`POST /api/internal/events/publish`,
 * as the service takes it) finds the client's subscription to the event,
 * stores the notification in PostgreSQL and queues its delivery, and answers
 * once both are durable; a job signs the body (RSA SHA-256, on libuv's thread
 * pool as the service signs), POSTs it with `X-Signature`, `X-JobId` and
 * `X-JobAttempt`, and records the attempt and the notification's status in
 * one statement. A failed attempt is retried by the queue, up to five.
 *
 * The bench runs each peer as a child process: it sends `subscribe` messages
 * (answered with the subscription's public key) and reads the publish port
 * from the `ready` message.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject, randomUUID, sign } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { Agent } from "undici";

/** A queued delivery: what the job carries, so that an attempt reads nothing before its POST. */
export interface Delivery {
  notificationId: string;
  subscriptionId: string;
  url: string;
  body: string;
}

export interface Queue {
  /** Queues the delivery; `client` is inside the transaction that stores its notification. */
  enqueue(delivery: Delivery, client: pg.PoolClient): Promise<void>;
  stop(): Promise<void>;
}

/** Attempts in all, as the service makes (the first and four retries). */
export const MAX_ATTEMPTS = 5;
/** Deliveries in flight at once. */
export const CONCURRENCY = 32;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS peer_subscriptions (
    id text PRIMARY KEY, client_id text NOT NULL, event text NOT NULL, url text NOT NULL, private_key text NOT NULL);
  CREATE INDEX IF NOT EXISTS peer_subscriptions_by_event ON peer_subscriptions (client_id, event);
  CREATE TABLE IF NOT EXISTS peer_notifications (
    id text PRIMARY KEY, subscription_id text NOT NULL, client_id text NOT NULL, event text NOT NULL, body text NOT NULL,
    status text NOT NULL, attempt_count int NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS peer_attempts (
    id bigserial PRIMARY KEY, notification_id text NOT NULL, attempt int NOT NULL, started_at timestamptz NOT NULL,
    duration_ms int NOT NULL, status_code int, error text, succeeded boolean NOT NULL);
  CREATE INDEX IF NOT EXISTS peer_attempts_by_notification ON peer_attempts (notification_id)`;

const RECORD = `
  WITH attempt AS (
    INSERT INTO peer_attempts (notification_id, attempt, started_at, duration_ms, status_code, error, succeeded)
    VALUES ($1, $2, $3, $4, $5, $6, $7))
  UPDATE peer_notifications SET status = $8, attempt_count = $2 + 1, updated_at = now() WHERE id = $1`;

/** A peer's process: its tables, its publish endpoint, and `attempt` for its queue's jobs to call. */
export async function runPeer(
  name: string,
  openQueue: (pool: pg.Pool, attempt: (delivery: Delivery, attempt: number) => Promise<void>) => Promise<Queue>,
): Promise<void> {
  const { PEER_DATABASE_URL: databaseUrl, PEER_TOKEN: token } = process.env;
  if (!databaseUrl || !token) throw new Error(`${name}: PEER_DATABASE_URL and PEER_TOKEN are required`);
  // Connections kept open, as a service keeps its pool: the bench reads their backends' CPU.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 20, idleTimeoutMillis: 0 });
  const connectionFailed = (error: Error) => console.error(`${name}: a database connection failed: ${error.message}`);
  pool.on("error", connectionFailed);
  pool.on("connect", (client) => client.on("error", connectionFailed));
  await pool.query(SCHEMA);
  const keys = new Map<string, KeyObject>();
  const agent = new Agent({ connections: CONCURRENCY });

  /** One attempt; throws when it failed and another is left, so that the queue retries it. */
  const attempt = async (delivery: Delivery, number: number): Promise<void> => {
    const key = keys.get(delivery.subscriptionId);
    if (!key) throw new Error(`no key for subscription ${delivery.subscriptionId}`);
    const startedAt = new Date();
    const signature = await new Promise<string>((resolve, reject) =>
      sign("sha256", Buffer.from(delivery.body), key, (error, bytes) => (error ? reject(error) : resolve(bytes.toString("base64")))),
    );
    let status: number | undefined;
    let error: string | undefined;
    try {
      const response = await agent.request({
        origin: new URL(delivery.url).origin,
        path: new URL(delivery.url).pathname,
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-signature": signature,
          "x-jobid": delivery.notificationId,
          "x-jobattempt": String(number),
        },
        body: delivery.body,
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      await response.body.dump();
      status = response.statusCode;
    } catch (failure) {
      error = (failure as Error).message;
    }
    const succeeded = status !== undefined && status >= 200 && status < 300;
    const final = succeeded ? "delivered" : number + 1 >= MAX_ATTEMPTS ? "failed" : "pending";
    await pool.query(RECORD, [
      delivery.notificationId,
      number,
      startedAt,
      Date.now() - startedAt.getTime(),
      status ?? null,
      error ?? null,
      succeeded,
      final,
    ]);
    if (final === "pending") throw new Error(`attempt ${number} failed: ${error ?? `HTTP ${status}`}`);
  };
  const queue = await openQueue(pool, attempt);

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      publish(req.url, req.headers.authorization, Buffer.concat(chunks)).then(
        (answer) => res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body)),
        (failure: unknown) => res.writeHead(500).end(JSON.stringify({ message: (failure as Error).message })),
      );
    });
  });
  const publish = async (path: string | undefined, authorization: string | undefined, raw: Buffer) => {
    if (path !== "/api/internal/events/publish") return { status: 404, body: { message: "not found" } };
    if (authorization !== `Bearer ${token}`) return { status: 401, body: { message: "unauthenticated" } };
    const { clientId, event, payload } = JSON.parse(raw.toString("utf8")) as { clientId: string; event: string; payload: object };
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ id: string; url: string }>(
        "SELECT id, url FROM peer_subscriptions WHERE client_id = $1 AND event = $2",
        [clientId, event],
      );
      const body = JSON.stringify({ Event: event, Timestamp: new Date().toISOString(), ...payload });
      const jobIds: string[] = [];
      for (const subscription of rows) {
        const notificationId = `ntf_${randomUUID().replaceAll("-", "")}`;
        await client.query(
          "INSERT INTO peer_notifications (id, subscription_id, client_id, event, body, status) VALUES ($1, $2, $3, $4, $5, 'pending')",
          [notificationId, subscription.id, clientId, event, body],
        );
        await queue.enqueue({ notificationId, subscriptionId: subscription.id, url: subscription.url, body }, client);
        jobIds.push(notificationId);
      }
      await client.query("COMMIT");
      return { status: 200, body: { jobIds, duplicate: false } };
    } catch (failure) {
      await client.query("ROLLBACK").catch(() => {});
      throw failure;
    } finally {
      client.release();
    }
  };

  process.on("message", async (message: { type: string; clientId: string; event: string; url: string }) => {
    if (message.type !== "subscribe") return;
    const { publicKey, privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
    });
    const id = `sub_${randomUUID().replaceAll("-", "")}`;
    await pool.query("INSERT INTO peer_subscriptions (id, client_id, event, url, private_key) VALUES ($1, $2, $3, $4, $5)", [
      id,
      message.clientId,
      message.event,
      message.url,
      privateKey,
    ]);
    keys.set(id, createPrivateKey(privateKey));
    process.send?.({ type: "subscribed", publicKey });
  });
  process.once("disconnect", async () => {
    server.close();
    await queue.stop();
    await agent.close();
    await pool.end();
    process.exit(0);
  });
  server.listen(0, "127.0.0.1", () => process.send?.({ type: "ready", port: (server.address() as AddressInfo).port }));
}
