/**
 * The benchmark's publisher, in its own process: an internal service calling
 * EventService/PublishEvent over gRPC.
 *
 * It shares the machine with the service it measures, so it is lean: each call
 * is one gRPC unary call framed by hand on a single HTTP/2 connection, with the
 * headers @grpc/grpc-js sends (but its user-agent), so the service sees the same
 * call and does the same work (an answer of 1 KiB or more comes back gzipped).
 * @grpc/grpc-js costs about 1.7 times its CPU per call at a paced 1,000
 * calls/s; BENCH_PUBLISHER=grpc-js publishes with it instead, to compare.
 */
import { type ClientHttp2Session, connect, constants } from "node:http2";
import { gunzipSync, inflateSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import * as grpc from "@grpc/grpc-js";
import {
  type PublishEventRequest,
  PublishEventRequestSchema,
  PublishEventResponseSchema,
} from "../src/gen/webhooks/v1/event_service_pb.js";

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
}

const METHOD = "/webhooks.v1.EventService/PublishEvent";

/** Why the last failed publish failed, for the bench to show. */
let failure = "";

/** One publish: the number of notifications it made, or -1 when it failed. */
type Publish = (request: PublishEventRequest) => Promise<number>;

function grpcJsPublisher(run: Run): { publish: Publish; close(): void } {
  const client = new grpc.Client(`127.0.0.1:${run.port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${run.adminToken}`);
  const publish: Publish = (request) =>
    new Promise((resolve) => {
      client.makeUnaryRequest(
        METHOD,
        (m: PublishEventRequest) => Buffer.from(toBinary(PublishEventRequestSchema, m)),
        (b: Buffer) => fromBinary(PublishEventResponseSchema, b),
        request,
        metadata,
        (error, value) => {
          if (error) failure = `${error.code}: ${error.details}`;
          resolve(error ? -1 : (value?.jobIds.length ?? 0));
        },
      );
    });
  return { publish, close: () => client.close() };
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
    [constants.HTTP2_HEADER_PATH]: METHOD,
    authorization: `Bearer ${run.adminToken}`,
    "grpc-accept-encoding": "identity,deflate,gzip",
    "accept-encoding": "identity",
    "user-agent": "webhooks-bench-publisher",
    "content-type": "application/grpc",
    te: "trailers",
  };
  const publish: Publish = (request) =>
    new Promise((resolve) => {
      let status: string | undefined;
      let encoding: string | undefined;
      /** Why this call failed, when the service or the connection said. */
      let reason: string | undefined;
      const chunks: Buffer[] = [];
      const stream = open().request(headers);
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
        const jobs = status === "0" ? jobCount(Buffer.concat(chunks), encoding) : -1;
        if (jobs < 0) failure = status === "0" ? "an answer that is not one PublishEvent response" : (reason ?? `grpc-status ${status}`);
        resolve(jobs);
      });
      stream.end(encodeEnvelope(0, toBinary(PublishEventRequestSchema, request)));
    });
  return { publish, close: () => session?.close() };
}

/**
 * The number of notifications in a PublishEvent answer: one envelope, compressed
 * (an answer of 1 KiB or more, as with many subscribers) with `encoding`; -1 if it is not one.
 */
function jobCount(body: Buffer, encoding: string | undefined): number {
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
    return bytes ? fromBinary(PublishEventResponseSchema, bytes).jobIds.length : -1;
  } catch {
    return -1;
  }
}

process.on("message", async (run: Run) => {
  const publisher = process.env.BENCH_PUBLISHER === "grpc-js" ? grpcJsPublisher(run) : http2Publisher(run);
  const publish = (seq: number) =>
    publisher.publish(
      create(PublishEventRequestSchema, {
        clientId: run.clientId,
        event: run.event,
        payload: { SentAt: Date.now(), Seq: seq },
      }),
    );
  const started = Date.now();
  let notifications = 0;
  let errors = 0;
  let next = 0;
  const worker = async () => {
    while (next < run.count) {
      const seq = next++;
      if (run.rate > 0) {
        const due = started + (seq * 1000) / run.rate;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      const jobs = await publish(seq);
      if (jobs < 0) errors++;
      else notifications += jobs;
    }
  };
  await Promise.all(Array.from({ length: run.concurrency }, worker));
  publisher.close();
  process.send?.({ type: "done", published: run.count - errors, notifications, errors, failure, durationMs: Date.now() - started });
});
process.send?.({ type: "ready" });
