/**
 * The benchmark's receiver, in its own process: verifies every signature
 * (RSA `X-Signature`, or Standard Webhooks `v1a` Ed25519 for a subscription
 * whose key is a `whpk_` one), answers 500 for the subscriptions told to
 * fail, and records receipt times and publish→receipt latency (the publisher
 * puts `SentAt` in the payload).
 */
import { createPublicKey, verify } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

interface Receipt {
  subscription: string;
  at: number;
  latencyMs: number;
  failing: boolean;
}

/** The notification id a request is counted once by, when its signature verifies; undefined when it does not. */
type Verifier = (body: Buffer, headers: IncomingHttpHeaders) => string | undefined;

/** Standard Webhooks' tolerance for `webhook-timestamp`, as its libraries apply it. */
const TIMESTAMP_TOLERANCE_SECONDS = 300;

/** A subscription's `signatureKey`: a `whpk_` Ed25519 public key, or an RSA public key (SPKI PEM). */
function verifierFor(signatureKey: string): Verifier {
  if (signatureKey.startsWith("whpk_")) {
    const raw = Buffer.from(signatureKey.slice("whpk_".length), "base64");
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
    return (body, headers) => {
      const id = headers["webhook-id"];
      const timestamp = headers["webhook-timestamp"];
      const signatures = headers["webhook-signature"];
      if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return undefined;
      if (!(Math.abs(Date.now() / 1000 - Number(timestamp)) <= TIMESTAMP_TOLERANCE_SECONDS)) return undefined;
      const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
      const verified = signatures
        .split(" ")
        .some((entry) => entry.startsWith("v1a,") && verify(null, signed, key, Buffer.from(entry.slice(4), "base64")));
      return verified ? id : undefined;
    };
  }
  const key = createPublicKey(signatureKey);
  return (body, headers) => {
    const signature = headers["x-signature"];
    if (typeof signature !== "string" || !verify("sha256", body, key, Buffer.from(signature, "base64"))) return undefined;
    return String(headers["x-jobid"]);
  };
}

const verifiers = new Map<string, Verifier>();
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
    const job = verifiers.get(subscription)?.(body, req.headers);
    if (job === undefined) {
      unsigned++;
      res.writeHead(400).end();
      return;
    }
    const fail = failing.has(subscription);
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
  if (message.type === "keys") for (const [id, key] of Object.entries(message.keys ?? {})) verifiers.set(id, verifierFor(key));
  if (message.type === "failing") for (const id of message.failing ?? []) failing.add(id);
  if (message.type === "reset") {
    records = [];
    seen.clear();
    failing.clear();
    // A reset may name the subscriptions that fail from now on: no request is answered in between.
    for (const id of message.failing ?? []) failing.add(id);
    unsigned = 0;
    requests = 0;
  }
  if (message.type === "report") process.send?.({ type: "report", records, unsigned, requests });
});

server.listen(0, "127.0.0.1", () => process.send?.({ type: "ready", port: (server.address() as AddressInfo).port }));
