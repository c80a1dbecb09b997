import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import test from "ava";
import { tracer } from "../../src/observability/tracer.js";
import { startTracing } from "../../src/observability/tracing.js";

test("startTracing sends spans by OTLP/HTTP to the configured traces URL, named by the service", async (t) => {
  const received: Array<{ path: string; headers: IncomingHttpHeaders; body: Buffer }> = [];
  const collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200, { "content-type": "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  t.teardown(() => collector.close());
  const port = (collector.address() as AddressInfo).port;

  const tracing = startTracing({ tracesUrl: `http://127.0.0.1:${port}/v1/traces`, serviceName: "webhooks-under-test" });
  tracer.startSpan("exported-span").end();
  // Shutting down flushes the batch: the spans are out when it resolves.
  await tracing.shutdown();

  t.is(received.length, 1);
  t.is(received[0]?.path, "/v1/traces");
  t.regex(String(received[0]?.headers["content-type"]), /^application\/(x-protobuf|json)/);
  const body = received[0]?.body.toString("latin1") ?? "";
  t.true(body.includes("exported-span"), "the span's name");
  t.true(body.includes("webhooks-under-test"), "the service.name resource attribute");
});
