import { create } from "@bufbuild/protobuf";
import { createContextValues } from "@connectrpc/connect";
import test from "ava";
import { createHealthService } from "../../../src/api/services/health-service.js";
import { HealthCheckRequestSchema, HealthCheckResponse_ServingStatus as Status } from "../../../src/gen/grpc/health/v1/health_pb.js";

function setUp() {
  let ready = true;
  const closing = new AbortController();
  const service = createHealthService({
    readiness: () => (ready ? { ok: true } : { ok: false, reason: "store down" }),
    services: ["webhooks.v1.EventService"],
    watchIntervalMs: 5,
    closing: closing.signal,
  });
  const call = new AbortController();
  // Only the signal of the handler context is read.
  const context = { signal: call.signal, values: createContextValues() } as never;
  return { service, closing, call, context, setReady: (value: boolean) => (ready = value) };
}

test("Check answers the readiness for the server and each served service; an unknown service is not_found", async (t) => {
  const { service, context, setReady } = setUp();
  const check = (name: string) => service.check?.(create(HealthCheckRequestSchema, { service: name }), context);
  t.like(await check(""), { status: Status.SERVING });
  t.like(await check("webhooks.v1.EventService"), { status: Status.SERVING });
  setReady(false);
  t.like(await check(""), { status: Status.NOT_SERVING });
  await t.throwsAsync(async () => check("nope"), { message: /unknown service/ });
});

test("Watch says the status, then each change, then NOT_SERVING and ends when the service shuts down", async (t) => {
  const { service, closing, context, setReady } = setUp();
  const stream = service.watch?.(create(HealthCheckRequestSchema, { service: "" }), context) as AsyncIterable<{ status: Status }>;
  const seen: Status[] = [];
  for await (const answer of stream) {
    seen.push(answer.status);
    if (seen.length === 1) setReady(false);
    if (seen.length === 2) {
      setReady(true);
      closing.abort();
    }
  }
  t.deepEqual(seen, [Status.SERVING, Status.NOT_SERVING]);
});

test("Watch of an unknown service says SERVICE_UNKNOWN and ends when the client cancels", async (t) => {
  const { service, call, context } = setUp();
  const stream = service.watch?.(create(HealthCheckRequestSchema, { service: "nope" }), context) as AsyncIterable<{ status: Status }>;
  const seen: Status[] = [];
  for await (const answer of stream) {
    seen.push(answer.status);
    call.abort();
  }
  t.deepEqual(seen, [Status.SERVICE_UNKNOWN]);
});
