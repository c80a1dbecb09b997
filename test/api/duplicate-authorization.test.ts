import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { request } from "node:http";
import { promisify } from "node:util";
import test from "ava";
import { API_KEY, sharedService } from "../helpers/service.js";

// Node's HTTP/2 client (and so @grpc/grpc-js) refuses to send a second
// Authorization header; gRPC's C core, under Python, sends what it is given.
const PYTHON = "/usr/bin/python3";
const run = promisify(execFile);
const pythonGrpc =
  existsSync(PYTHON) &&
  (await run(PYTHON, ["-c", "import grpc"]).then(
    () => true,
    () => false,
  ));
if (!pythonGrpc) console.warn("!!! the gRPC duplicate-Authorization test is SKIPPED: install Debian's python3-grpcio (.ci/run does)");

const running = sharedService(test);
/** The caller's own key first: Node kept the first and dropped the second. */
const TWO_KEYS = [`Bearer ${API_KEY}`, "Bearer someone-elses-key-0123456789"];

/** An HTTP/1.1 request sending each Authorization value as its own header line (fetch would join them). */
function http1(method: string, path: string, headers: Record<string, string>, body: Uint8Array | string = "") {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
    const req = request(`${running.baseUrl}${path}`, { method }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.setHeader("authorization", TWO_KEYS);
    for (const [name, value] of Object.entries(headers)) req.setHeader(name, value);
    req.end(body);
  });
}

test("REST: two Authorization headers are 400 invalid_argument", async (t) => {
  const response = await http1("GET", "/api/webhookSubscription/events", {});
  t.is(response.status, 400, response.body.toString());
  t.like(JSON.parse(response.body.toString()), {
    code: "invalid_argument",
    message: "the request carries 2 Authorization headers; send exactly one",
  });
});

test("Connect: two Authorization headers are 400 invalid_argument", async (t) => {
  const response = await http1("POST", "/webhooks.v1.SubscriptionService/ListEvents", { "content-type": "application/json" }, "{}");
  t.is(response.status, 400, response.body.toString());
  t.like(JSON.parse(response.body.toString()), { code: "invalid_argument" });
});

test("gRPC-Web: two Authorization headers are INVALID_ARGUMENT (3)", async (t) => {
  const response = await http1(
    "POST",
    "/webhooks.v1.SubscriptionService/ListEvents",
    { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    new Uint8Array(5), // one empty message
  );
  const trailers =
    response.headers["grpc-status"] === undefined ? response.body.subarray(5).toString() : `grpc-status:${response.headers["grpc-status"]}`;
  t.regex(trailers, /grpc-status:\s*3\b/);
});

(pythonGrpc ? test : test.skip)("gRPC (Python grpcio): two Authorization headers are INVALID_ARGUMENT", async (t) => {
  const script = `
import sys, grpc
channel = grpc.insecure_channel(sys.argv[1])
call = channel.unary_unary("/webhooks.v1.SubscriptionService/ListEvents")
try:
    call(b"", metadata=[("authorization", sys.argv[2]), ("authorization", sys.argv[3])], timeout=10)
    print("OK")
except grpc.RpcError as error:
    print(error.code().name, error.details())
`;
  const { stdout } = await run(PYTHON, ["-c", script, `127.0.0.1:${running.service.port}`, ...TWO_KEYS]);
  t.is(stdout.trim(), "INVALID_ARGUMENT the request carries 2 Authorization headers; send exactly one");
});

test("one Authorization header still works", async (t) => {
  const response = await fetch(`${running.baseUrl}/api/webhookSubscription/events`, { headers: { authorization: TWO_KEYS[0] as string } });
  t.is(response.status, 200);
});
