/**
 * The CPU a binary gRPC unary PublishEvent call costs the service's own lane
 * (grpc-unary.ts), made as the adapter makes it, without a network: three
 * pass-through interceptors and an implementation that answers at once, in
 * three rounds of 30,000 calls after 3,000 not counted, garbage collection
 * included. `--deadline` sends a grpc-timeout with each call; `--connect-es`
 * sends each through connect-es's own gRPC handler for the method instead.
 *
 *   node --import tsx bench/grpc-unary-loop.ts [--deadline] [--connect-es]
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { createContextValues, type Interceptor } from "@connectrpc/connect";
import { createAsyncIterable, createMethodUrl, encodeEnvelope } from "@connectrpc/connect/protocol";
import { answerGrpcUnary, createRecordingRouter, grpcUnaryCall } from "../src/api/grpc-unary.js";
import { EventService, PublishEventRequestSchema, PublishEventResponseSchema } from "../src/gen/webhooks/v1/event_service_pb.js";

const pass: Interceptor = (next) => async (request) => next(request);
const { router, methods } = createRecordingRouter({ interceptors: [pass, pass, pass] });
router.service(EventService, { publishEvent: async () => create(PublishEventResponseSchema, { jobIds: ["job-1"] }) });
const path = createMethodUrl("/", EventService.method.publishEvent);
const method = methods.get(path);
const viaConnectEs = process.argv.includes("--connect-es");
const found = router.handlers.find((candidate) => candidate.requestPath === path);
if (!found) throw new Error(`no handler for ${path}`);
const handler = found;
const message = create(PublishEventRequestSchema, { clientId: "c1", event: "Order.Created", payload: { orderId: "o-1" } });
const body = encodeEnvelope(0, toBinary(PublishEventRequestSchema, message));
const headers = {
  "content-type": "application/grpc",
  te: "trailers",
  ...(process.argv.includes("--deadline") ? { "grpc-timeout": "10S" } : {}),
};

async function call(): Promise<void> {
  const controller = new AbortController();
  const request = {
    httpVersion: "2.0",
    method: "POST",
    url: `http://127.0.0.1${path}`,
    header: new Headers(headers),
    body: createAsyncIterable([body]),
    signal: controller.signal,
    contextValues: createContextValues(),
  };
  if (viaConnectEs) {
    const response = await handler(request);
    for await (const _chunk of response.body ?? []);
    if (response.trailer?.get("grpc-status") !== "0") throw new Error("connect-es's handler did not answer the call");
    return;
  }
  const unary = grpcUnaryCall(method, request, body, controller);
  if (!unary || (await answerGrpcUnary(unary)).trailer.get("grpc-status") !== "0") throw new Error("the lane did not answer the call");
}

for (let i = 0; i < 3_000; i++) await call();
for (let round = 1; round <= 3; round++) {
  const before = process.cpuUsage();
  for (let i = 0; i < 30_000; i++) await call();
  const used = process.cpuUsage(before);
  console.log(`round ${round}: ${((used.user + used.system) / 30_000).toFixed(1)} µs of CPU per call`);
}
