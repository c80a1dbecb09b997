import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "../../src/gen/grpc/health/v1/health_pb.js";
import { grpcCall, SERVED_SERVICES } from "../helpers/grpc.js";
import { API_KEY, embeddedService, sharedService } from "../helpers/service.js";

const run = promisify(execFile);
const shared = sharedService(test);
const port = () => shared.service.port;

/** `buf curl` over gRPC (HTTP/2 without TLS), the schema from server reflection only. */
async function bufCurl(args: string[]): Promise<string> {
  const { stdout } = await run("node_modules/.bin/buf", ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], {
    timeout: 60_000,
  });
  return stdout;
}

for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
  test(`buf curl --reflect (${protocol}) lists the services and calls ListEvents with no proto file`, async (t) => {
    const listed = await bufCurl(["--reflect", "--reflect-protocol", protocol, "--list-services", shared.baseUrl]);
    t.deepEqual(listed.trim().split("\n").sort(), SERVED_SERVICES);
    const methods = await bufCurl(["--reflect", "--reflect-protocol", protocol, "--list-methods", shared.baseUrl]);
    t.true(methods.split("\n").includes("webhooks.v1.EventService/PublishEvent"), methods);
    const answer = await bufCurl([
      "--reflect",
      "--reflect-protocol",
      protocol,
      "-H",
      `authorization: Bearer ${API_KEY}`,
      "--data",
      "{}",
      `${shared.baseUrl}/webhooks.v1.SubscriptionService/ListEvents`,
    ]);
    const events = (JSON.parse(answer) as { events: Array<{ name: string }> }).events.map((event) => event.name);
    t.true(events.includes("Order.Created"), answer);
  });
}

test("grpc.health.v1 Check over real gRPC and over Connect JSON: SERVING while ready, NOT_FOUND for an unknown service", async (t) => {
  const check = (service: string) =>
    grpcCall(port(), Health, "Check", HealthCheckRequestSchema, HealthCheckResponseSchema, { service }, "");
  t.is((await check("")).status, Status.SERVING);
  t.is((await check("webhooks.v1.EventService")).status, Status.SERVING);
  const unknown = await check("no.such.Service").catch((error: grpc.ServiceError) => error);
  t.is((unknown as grpc.ServiceError).code, grpc.status.NOT_FOUND);
  const viaConnect = await fetch(`${shared.baseUrl}/grpc.health.v1.Health/Check`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  t.deepEqual(await viaConnect.json(), { status: "SERVING" });
});

test.serial("grpc.health.v1 Watch over real gRPC: SERVING, then NOT_SERVING as the service shuts down, then the stream ends", async (t) => {
  const { service } = await embeddedService(t);
  const client = new grpc.Client(`127.0.0.1:${service.port}`, grpc.credentials.createInsecure());
  const call = client.makeServerStreamRequest(
    "/grpc.health.v1.Health/Watch",
    (request: { service: string }) =>
      Buffer.from(toBinary(HealthCheckRequestSchema, { $typeName: "grpc.health.v1.HealthCheckRequest", ...request })),
    (bytes: Buffer) => fromBinary(HealthCheckResponseSchema, bytes),
    { service: "" },
  );
  const seen: Status[] = [];
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  // grpc-js emits "error" before "status" for a stream that ends otherwise than OK (cut by the
  // shutdown's grace deadline on a slow machine): its outcome is read from "status".
  call.on("error", () => {});
  call.on("data", (answer: { status: Status }) => {
    seen.push(answer.status);
    if (seen.length === 1) void service.stop();
  });
  const status = await ended;
  client.close();
  t.is(status.code, grpc.status.OK, status.details);
  t.deepEqual(seen, [Status.SERVING, Status.NOT_SERVING]);
});

test("over gRPC too, the request id comes back in the response metadata", async (t) => {
  const client = new grpc.Client(`127.0.0.1:${port()}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("x-request-id", "grpc-caller-7");
  const answered = await new Promise<grpc.Metadata>((resolve, reject) => {
    const call = client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      () => Buffer.alloc(0),
      (bytes: Buffer) => fromBinary(HealthCheckResponseSchema, bytes),
      {},
      metadata,
      (error) => {
        if (error) reject(error);
      },
    );
    call.on("metadata", resolve);
  });
  client.close();
  t.deepEqual(answered.get("x-request-id"), ["grpc-caller-7"]);
});
