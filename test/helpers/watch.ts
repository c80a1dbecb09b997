import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import {
  type DeliveryActivity,
  DeliveryActivityKind,
  DeliveryService,
  WatchDeliveriesRequestSchema,
  WatchDeliveriesResponseSchema,
} from "../../src/gen/webhooks/v1/delivery_service_pb.js";
import { EventService, type WatchAllDeliveriesRequestSchema } from "../../src/gen/webhooks/v1/event_service_pb.js";

/**
 * A live watch as a test reads it: started once the service says the watch
 * is in place (its first message), then read until a condition holds.
 */
export class Watching {
  readonly activities: DeliveryActivity[] = [];
  #iterator: AsyncIterator<{ activity?: DeliveryActivity | undefined }>;
  readonly #abort: AbortController;

  private constructor(iterator: AsyncIterator<{ activity?: DeliveryActivity | undefined }>, abort: AbortController) {
    this.#iterator = iterator;
    this.#abort = abort;
  }

  /** Opens the stream and waits for the message saying the watch is in place; replayed activities before it are kept. */
  static async open(stream: (signal: AbortSignal) => AsyncIterable<{ activity?: DeliveryActivity | undefined }>): Promise<Watching> {
    const abort = new AbortController();
    const watching = new Watching(stream(abort.signal)[Symbol.asyncIterator](), abort);
    for (;;) {
      const { value, done } = await watching.#iterator.next();
      if (done) throw new Error("the stream ended before the watch was in place");
      if (!value.activity) return watching;
      watching.activities.push(value.activity);
    }
  }

  /** Reads until `predicate` holds for what was read; rejects after `timeoutMs`. */
  async until(predicate: (activities: DeliveryActivity[]) => boolean, timeoutMs = 20_000): Promise<DeliveryActivity[]> {
    const timer = setTimeout(() => this.#abort.abort(), timeoutMs);
    try {
      while (!predicate(this.activities)) {
        const { value, done } = await this.#iterator.next();
        if (done) throw new Error(`the stream ended after ${this.activities.length} activities`);
        if (value.activity) this.activities.push(value.activity);
      }
      return this.activities;
    } catch (error) {
      if (this.#abort.signal.aborted) throw new Error(`no match within ${timeoutMs} ms; read: ${describe(this.activities).join(", ")}`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.#abort.abort();
  }
}

/** A watch of the client's own deliveries over a Connect transport (Connect, gRPC or gRPC-Web). */
export function watchOver(transport: Transport, token: string, request: MessageInitShape<typeof WatchDeliveriesRequestSchema> = {}) {
  const client = createClient(DeliveryService, transport);
  return Watching.open((signal) => client.watchDeliveries(request, { headers: { authorization: `Bearer ${token}` }, signal }));
}

/** An admin watch of every client's deliveries (or one client's). */
export function watchAllOver(transport: Transport, token: string, request: MessageInitShape<typeof WatchAllDeliveriesRequestSchema> = {}) {
  const client = createClient(EventService, transport);
  return Watching.open((signal) => client.watchAllDeliveries(request, { headers: { authorization: `Bearer ${token}` }, signal }));
}

/** A watch through @grpc/grpc-js, the reference gRPC client: the call itself, to pause and resume. */
export function grpcWatch(
  port: number,
  token: string,
  request: MessageInitShape<typeof WatchDeliveriesRequestSchema> = {},
): { call: grpc.ClientReadableStream<{ activity?: DeliveryActivity }>; client: grpc.Client } {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const call = client.makeServerStreamRequest(
    `/${DeliveryService.typeName}/WatchDeliveries`,
    (message: MessageInitShape<typeof WatchDeliveriesRequestSchema>) =>
      Buffer.from(toBinary(WatchDeliveriesRequestSchema, create(WatchDeliveriesRequestSchema, message))),
    (bytes: Buffer) => fromBinary(WatchDeliveriesResponseSchema, bytes),
    request,
    metadata,
  );
  return { call, client };
}

/** "KIND attempt status" for each activity: what a flow's assertions compare. */
export function describe(activities: readonly DeliveryActivity[]): string[] {
  return activities.map((activity) => {
    const kind = DeliveryActivityKind[activity.kind] ?? String(activity.kind);
    if (activity.kind === DeliveryActivityKind.ATTEMPT_STARTED) return `${kind} ${activity.attempt}`;
    if (activity.kind === DeliveryActivityKind.ATTEMPT_FINISHED)
      return `${kind} ${activity.attempt} ${activity.statusCode || activity.error}`;
    return kind;
  });
}

/** The activities of one job. */
export function ofJob(activities: readonly DeliveryActivity[], jobId: string): DeliveryActivity[] {
  return activities.filter((activity) => activity.jobId === jobId);
}
