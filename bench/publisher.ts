/**
 * The benchmark's publisher, in its own process: an internal service calling
 * EventService/PublishEvent over gRPC (@grpc/grpc-js).
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { PublishEventRequestSchema, PublishEventResponseSchema } from "../src/gen/webhooks/v1/event_service_pb.js";

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

process.on("message", async (run: Run) => {
  const client = new grpc.Client(`127.0.0.1:${run.port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${run.adminToken}`);
  const publish = (seq: number) =>
    new Promise<number>((resolve) => {
      const request = create(PublishEventRequestSchema, {
        clientId: run.clientId,
        event: run.event,
        payload: { SentAt: Date.now(), Seq: seq },
      });
      client.makeUnaryRequest(
        "/webhooks.v1.EventService/PublishEvent",
        (m: typeof request) => Buffer.from(toBinary(PublishEventRequestSchema, m)),
        (b: Buffer) => fromBinary(PublishEventResponseSchema, b),
        request,
        metadata,
        (error, value) => resolve(error ? -1 : (value?.jobIds.length ?? 0)),
      );
    });
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
  client.close();
  process.send?.({ type: "done", published: run.count - errors, notifications, errors, durationMs: Date.now() - started });
});
process.send?.({ type: "ready" });
