import { connect as connectHttp2, type IncomingHttpHeaders } from "node:http2";
import { create, type DescMessage, fromBinary, type MessageInitShape, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { GenService } from "@bufbuild/protobuf/codegenv2";
import * as grpc from "@grpc/grpc-js";

/** Every gRPC service the port serves, health and reflection included, sorted by name. */
export const SERVED_SERVICES = [
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
  "webhooks.v1.ClientService",
  "webhooks.v1.DeliveryService",
  "webhooks.v1.EventService",
  "webhooks.v1.SubscriptionService",
];

/**
 * A unary call through @grpc/grpc-js, the reference gRPC client, with
 * protobuf-es (de)serialisers: proof that the port speaks real gRPC.
 */
export function grpcCall<I extends DescMessage, O extends DescMessage>(
  port: number,
  // biome-ignore lint/suspicious/noExplicitAny: any service shape
  service: GenService<any>,
  method: string,
  input: I,
  output: O,
  request: MessageInitShape<I>,
  token: string,
): Promise<MessageShape<O>> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const path = `/${service.typeName}/${method}`;
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      path,
      (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
      (b: Buffer) => fromBinary(output, b),
      create(input, request),
      metadata,
      (error, value) => {
        client.close();
        if (error) reject(error);
        else resolve(value as MessageShape<O>);
      },
    );
  });
}

/**
 * A unary call through @grpc/grpc-js with the request as raw bytes, as a
 * broken or hostile client sends them; resolves with the status it ended with.
 */
export function grpcRawCall(
  port: number,
  path: string,
  bytes: Uint8Array,
  headers: Record<string, string | string[]> = {},
): Promise<grpc.StatusObject> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  for (const [name, values] of Object.entries(headers)) for (const value of [values].flat()) metadata.add(name, value);
  return new Promise((resolve) => {
    const call = client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from(bytes),
      metadata,
      () => {},
    );
    call.on("status", (status) => {
      client.close();
      resolve(status);
    });
  });
}

/**
 * A gRPC unary call framed by hand over HTTP/2 (`body`: its envelopes, as
 * any client's library frames them): what comes back, unparsed.
 */
export function grpcOverHttp2(
  port: number,
  path: string,
  body: Uint8Array,
  headers: Record<string, string>,
): Promise<{ headers: IncomingHttpHeaders; trailers: IncomingHttpHeaders; body: Buffer }> {
  const client = connectHttp2(`http://127.0.0.1:${port}`);
  return new Promise((resolve, reject) => {
    const stream = client.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
    let answered: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      answered = h;
    });
    stream.on("trailers", (h) => {
      trailers = h;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    client.on("error", reject);
    stream.on("error", reject);
    stream.on("close", () => {
      client.close();
      resolve({ headers: answered, trailers, body: Buffer.concat(chunks) });
    });
    stream.end(body);
  });
}
