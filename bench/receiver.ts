/**
 * The benchmark's receiver, in its own process: verifies every signature,
 * answers 500 for the subscriptions told to fail, and records receipt times
 * and publish→receipt latency (the publisher puts `SentAt` in the payload).
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

interface Receipt {
  subscription: string;
  at: number;
  latencyMs: number;
  failing: boolean;
}

const keys = new Map<string, KeyObject>();
const failing = new Set<string>();
/** Subscriptions whose requests are never answered: a backlog that stays pending. */
const held = new Set<string>();
const seen = new Set<string>();
let records: Receipt[] = [];
let unsigned = 0;
let requests = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    if (held.has((req.url ?? "").split("/")[2] ?? "")) return;
    requests++;
    const at = Date.now();
    const body = Buffer.concat(chunks);
    const subscription = (req.url ?? "").split("/")[2] ?? "";
    const key = keys.get(subscription);
    const signature = req.headers["x-signature"];
    if (!key || typeof signature !== "string" || !verify("sha256", body, key, Buffer.from(signature, "base64"))) {
      unsigned++;
      res.writeHead(400).end();
      return;
    }
    const fail = failing.has(subscription);
    const job = String(req.headers["x-jobid"]);
    if (!fail && !seen.has(job)) {
      seen.add(job);
      const sentAt = (JSON.parse(body.toString("utf8")) as { SentAt?: number }).SentAt ?? at;
      records.push({ subscription, at, latencyMs: at - sentAt, failing: fail });
    }
    res.writeHead(fail ? 500 : 200).end();
  });
});

process.on("message", (message: { type: string; keys?: Record<string, string>; failing?: string[]; held?: string[] }) => {
  if (message.type === "hold") for (const id of message.held ?? []) held.add(id);
  if (message.type === "keys") for (const [id, pem] of Object.entries(message.keys ?? {})) keys.set(id, createPublicKey(pem));
  if (message.type === "failing") for (const id of message.failing ?? []) failing.add(id);
  if (message.type === "reset") {
    records = [];
    seen.clear();
    failing.clear();
    unsigned = 0;
    requests = 0;
  }
  if (message.type === "report") process.send?.({ type: "report", records, unsigned, requests });
});

server.listen(0, "127.0.0.1", () => process.send?.({ type: "ready", port: (server.address() as AddressInfo).port }));
