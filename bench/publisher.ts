/**
 * The benchmark's publisher, in its own process: an internal service calling
 * EventService/PublishEvent (or PublishEvents, `batch` events a call) over
 * gRPC, REST or Connect.
 *
 * It shares the machine with the service it measures, so it is lean. A gRPC
 * call is one unary call framed by hand on a single HTTP/2 connection, with
 * the headers @grpc/grpc-js sends (but its user-agent), so the service sees
 * the same call and does the same work (an answer of 1 KiB or more comes back
 * gzipped). @grpc/grpc-js costs about 1.7 times its CPU per call at a paced
 * 1,000 calls/s; BENCH_PUBLISHER=grpc-js publishes with it instead, to
 * compare. REST (JSON) and Connect (binary protobuf, as connect-es clients
 * send it) go over HTTP/1.1 keep-alive connections, one per call in flight.
 */
import { type ClientHttp2Session, connect, constants } from "node:http2";
import { gunzipSync, inflateSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import * as grpc from "@grpc/grpc-js";
import { Agent } from "undici";
import {
  type PublishEventRequest,
  PublishEventRequestSchema,
  PublishEventResponseSchema,
  PublishEventsRequestSchema,
  PublishEventsResponseSchema,
} from "../src/gen/webhooks/v1/event_service_pb.js";

export type Protocol = "grpc" | "rest" | "connect";

interface Run {
  type: "run";
  port: number;
  adminToken: string;
  clientId: string;
  event: string;
  count: number;
  /** Events per second; 0 = as fast as the service accepts them. */
  rate: number;
  concurrency: number;
  /** How the calls go; gRPC unless said. */
  protocol?: Protocol;
  /** Events per call: above 1, they go in PublishEvents calls (`count` rounded up to whole calls). */
  batch?: number;
}

const SERVICE = "/webhooks.v1.EventService";
const REST_PATHS = { one: "/api/internal/events/publish", batch: "/api/internal/events/publishBatch" };

/** Why the last failed publish failed, for the bench to show. */
let failure = "";

/** One call publishing its events: the number of notifications they made, or -1 when it failed. */
type Publish = (requests: PublishEventRequest[]) => Promise<number>;

/** A call's message: the one event, or PublishEvents of them all. */
function encode(requests: PublishEventRequest[]): Uint8Array {
  if (requests.length === 1) return toBinary(PublishEventRequestSchema, requests[0] as PublishEventRequest);
  return toBinary(PublishEventsRequestSchema, create(PublishEventsRequestSchema, { events: requests }));
}

/** The notifications an answer (to `batch` events a call) made. */
function notificationsIn(bytes: Uint8Array, batch: boolean): number {
  if (!batch) return fromBinary(PublishEventResponseSchema, bytes).jobIds.length;
  return fromBinary(PublishEventsResponseSchema, bytes).results.reduce((sum, result) => sum + result.jobIds.length, 0);
}

const methodOf = (requests: readonly PublishEventRequest[]) => `${SERVICE}/${requests.length === 1 ? "PublishEvent" : "PublishEvents"}`;

function grpcJsPublisher(run: Run): { publish: Publish; close(): void } {
  const client = new grpc.Client(`127.0.0.1:${run.port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${run.adminToken}`);
  const publish: Publish = (requests) =>
    new Promise((resolve) => {
      client.makeUnaryRequest(
        methodOf(requests),
        (m: PublishEventRequest[]) => Buffer.from(encode(m)),
        (b: Buffer) => notificationsIn(b, requests.length > 1),
        requests,
        metadata,
        (error, value) => {
          if (error) failure = `${error.code}: ${error.details}`;
          resolve(error ? -1 : (value ?? 0));
        },
      );
    });
  return { publish, close: () => client.close() };
}

/** REST (JSON) or Connect (binary protobuf) over HTTP/1.1. */
function http1Publisher(run: Run, protocol: "rest" | "connect"): { publish: Publish; close(): void } {
  const agent = new Agent({ connections: run.concurrency });
  const origin = `http://127.0.0.1:${run.port}`;
  const publish: Publish = async (requests) => {
    const batch = requests.length > 1;
    try {
      const response = await agent.request(
        protocol === "rest"
          ? {
              origin,
              method: "POST",
              path: batch ? REST_PATHS.batch : REST_PATHS.one,
              headers: { authorization: `Bearer ${run.adminToken}`, "content-type": "application/json" },
              body: JSON.stringify(batch ? { events: requests.map(toRestJson) } : toRestJson(requests[0] as PublishEventRequest)),
            }
          : {
              origin,
              method: "POST",
              path: methodOf(requests),
              headers: {
                authorization: `Bearer ${run.adminToken}`,
                "content-type": "application/proto",
                "connect-protocol-version": "1",
              },
              body: encode(requests),
            },
      );
      if (response.statusCode !== 200) {
        failure = `HTTP ${response.statusCode}: ${(await response.body.text()).slice(0, 200)}`;
        return -1;
      }
      if (protocol === "connect") return notificationsIn(new Uint8Array(await response.body.arrayBuffer()), batch);
      const answer = (await response.body.json()) as { jobIds?: string[]; results?: Array<{ jobIds?: string[] }> };
      return batch ? (answer.results ?? []).reduce((sum, result) => sum + (result.jobIds?.length ?? 0), 0) : (answer.jobIds?.length ?? 0);
    } catch (error) {
      failure = (error as Error).message;
      return -1;
    }
  };
  return { publish, close: () => void agent.close() };
}

/** A request as the REST API takes it (proto JSON). */
function toRestJson(request: PublishEventRequest): Record<string, unknown> {
  return { clientId: request.clientId, event: request.event, payload: request.payload };
}

function http2Publisher(run: Run): { publish: Publish; close(): void } {
  let session: ClientHttp2Session | undefined;
  const open = () => {
    if (session && !session.closed && !session.destroyed) return session;
    const opened = connect(`http://127.0.0.1:${run.port}`);
    // A failed connection fails its calls (below); the next call opens a new one.
    opened.on("error", () => {});
    session = opened;
    return opened;
  };
  const headers = {
    [constants.HTTP2_HEADER_METHOD]: "POST",
    authorization: `Bearer ${run.adminToken}`,
    "grpc-accept-encoding": "identity,deflate,gzip",
    "accept-encoding": "identity",
    "user-agent": "webhooks-bench-publisher",
    "content-type": "application/grpc",
    te: "trailers",
  };
  const publish: Publish = (requests) =>
    new Promise((resolve) => {
      let status: string | undefined;
      let encoding: string | undefined;
      /** Why this call failed, when the service or the connection said. */
      let reason: string | undefined;
      const chunks: Buffer[] = [];
      const stream = open().request({ ...headers, [constants.HTTP2_HEADER_PATH]: methodOf(requests) });
      stream.on("response", (h) => {
        encoding = h["grpc-encoding"] as string | undefined;
        status = h["grpc-status"] as string | undefined; // a trailers-only answer
      });
      stream.on("trailers", (h) => {
        status = h["grpc-status"] as string | undefined;
        reason = `grpc-status ${status}: ${h["grpc-message"]}`;
      });
      // No grpc-timeout, as grpc-js sends none without a deadline; but a call the service never answers fails.
      stream.setTimeout(60_000, () => stream.close(constants.NGHTTP2_CANCEL));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", (error) => {
        reason = error.message;
      });
      stream.on("close", () => {
        const jobs = status === "0" ? jobCount(Buffer.concat(chunks), encoding, requests.length > 1) : -1;
        if (jobs < 0) failure = status === "0" ? "an answer that is not one PublishEvent response" : (reason ?? `grpc-status ${status}`);
        resolve(jobs);
      });
      stream.end(encodeEnvelope(0, encode(requests)));
    });
  return { publish, close: () => session?.close() };
}

/**
 * The number of notifications in a PublishEvent answer: one envelope, compressed
 * (an answer of 1 KiB or more, as with many subscribers) with `encoding`; -1 if it is not one.
 */
function jobCount(body: Buffer, encoding: string | undefined, batch: boolean): number {
  try {
    if (body.length < 5 || body.length !== 5 + body.readUInt32BE(1)) return -1;
    const compressed = body[0] === 1;
    const message = body.subarray(5);
    const bytes = !compressed
      ? message
      : encoding === "gzip"
        ? gunzipSync(message)
        : encoding === "deflate"
          ? inflateSync(message)
          : undefined;
    return bytes ? notificationsIn(bytes, batch) : -1;
  } catch {
    return -1;
  }
}

process.on("message", async (run: Run) => {
  const protocol = run.protocol ?? "grpc";
  const publisher =
    protocol !== "grpc"
      ? http1Publisher(run, protocol)
      : process.env.BENCH_PUBLISHER === "grpc-js"
        ? grpcJsPublisher(run)
        : http2Publisher(run);
  const batch = Math.max(1, run.batch ?? 1);
  const calls = Math.ceil(run.count / batch);
  const request = (seq: number) =>
    create(PublishEventRequestSchema, {
      clientId: run.clientId,
      event: run.event,
      payload: { SentAt: Date.now(), Seq: seq },
    });
  const started = Date.now();
  let notifications = 0;
  let errors = 0;
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const call = next++;
      if (run.rate > 0) {
        const due = started + (call * batch * 1000) / run.rate;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      const jobs = await publisher.publish(Array.from({ length: batch }, (_, i) => request(call * batch + i)));
      if (jobs < 0) errors += batch;
      else notifications += jobs;
    }
  };
  await Promise.all(Array.from({ length: run.concurrency }, worker));
  publisher.close();
  process.send?.({
    type: "done",
    published: calls * batch - errors,
    notifications,
    errors,
    failure,
    durationMs: Date.now() - started,
  });
});
process.send?.({ type: "ready" });
