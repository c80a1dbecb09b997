import { create, type DescMessage, fromBinary, type MessageInitShape, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { GenService } from "@bufbuild/protobuf/codegenv2";
import * as grpc from "@grpc/grpc-js";

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
