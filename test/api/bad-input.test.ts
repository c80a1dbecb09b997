import { Agent, request } from "node:http";
import { gzipSync } from "node:zlib";
import test from "ava";
import { Receiver } from "../helpers/receiver.js";
import { API_KEY, rest, restAnswer, sharedService } from "../helpers/service.js";

// Production target rules: no private addresses, no plain http.
const running = sharedService(test, { MAX_BODY_BYTES: "65536", ALLOW_PRIVATE_TARGETS: "false", ALLOW_HTTP_TARGETS: "false" });
const receiver = Receiver.shared(test);

const SUBSCRIBE = "/api/webhookSubscription";
const auth = { authorization: `Bearer ${API_KEY}` };

/** Every refusal is a Connect error JSON and leaves the service serving. */
async function expectError(
  t: import("ava").ExecutionContext,
  response: Awaited<ReturnType<typeof rest>>,
  status: number,
  code: string,
  message?: RegExp,
) {
  t.is(response.status, status, response.text);
  t.is(response.json.code, code, response.text);
  t.is(typeof response.json.message, "string");
  if (message) t.regex(response.json.message as string, message);
  const alive = await rest(running.baseUrl, "GET", "/api/webhookSubscription/events");
  t.is(alive.status, 200, "still serving");
}

test("no API key: 401", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "GET", "/api/webhookSubscription/events", undefined, {}),
    401,
    "unauthenticated",
    /missing API key/,
  );
});

test("a wrong API key: 401", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "POST", SUBSCRIBE, { event: "Order.Created", url: receiver.url }, { authorization: "Bearer nope" }),
    401,
    "unauthenticated",
    /invalid API key/,
  );
});

test("an unknown event: 400 naming the events list", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "POST", SUBSCRIBE, { event: "Order.Exploded", url: receiver.url }),
    400,
    "invalid_argument",
    /unknown event.*events/,
  );
});

for (const [name, event] of [
  ["empty", ""],
  ["spaces", "Order Created"],
  ["path traversal", "../x"],
  ["10k characters", `A.${"b".repeat(10_000)}`],
] as const) {
  test(`a malformed event name (${name}): 400`, async (t) => {
    await expectError(
      t,
      await rest(running.baseUrl, "POST", SUBSCRIBE, { event, url: receiver.url }),
      400,
      "invalid_argument",
      /<Entity>\.<Event>/,
    );
  });
}

for (const [name, url, message] of [
  ["missing", undefined, /url is required/],
  ["garbage", "not-a-url", /not an absolute URL/],
  ["spaces", "https://exa mple.com/hook", /whitespace/],
  ["ftp scheme", "ftp://example.com/hook", /must use https/],
  ["javascript scheme", "javascript:alert(1)", /must use https/],
  ["credentials", "https://user:pass@example.com/hook", /credentials/],
  ["over 2048 characters", `https://example.com/${"a".repeat(2100)}`, /longer than 2048/],
] as const) {
  test(`an invalid url (${name}): 400`, async (t) => {
    await expectError(
      t,
      await rest(running.baseUrl, "POST", SUBSCRIBE, { event: "Order.Created", ...(url ? { url } : {}) }),
      400,
      "invalid_argument",
      message,
    );
  });
}

const SSRF_URLS = [
  "http://hooks.example.com/plain-http",
  "https://127.0.0.1/",
  "https://localhost/",
  "https://kubernetes/",
  "https://2130706433/",
  "https://0x7f000001/",
  "https://0177.0.0.1/",
  "https://0.0.0.0/",
  "https://10.0.0.1/",
  "https://172.16.5.4/",
  "https://192.168.0.10/",
  "https://100.64.0.1/",
  "https://169.254.169.254/latest/meta-data/",
  "https://198.18.0.1/",
  "https://192.0.0.1/",
  "https://240.0.0.1/",
  "https://224.0.0.1/",
  "https://255.255.255.255/",
  "https://[::1]/",
  "https://[::]/",
  "https://[fc00::1]/",
  "https://[fe80::1]/",
  "https://[fec0::1]/",
  "https://[::ffff:127.0.0.1]/",
  "https://[::ffff:a9fe:a9fe]/",
  "https://[64:ff9b::a00:1]/",
  "https://[2002:c0a8:1::]/",
  "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", // Teredo
  "https://[2001:2::1]/", // benchmarking
  "https://[2001:10::1]/", // ORCHID
  "https://[2001:20::1]/", // ORCHIDv2
  "https://[3fff::1]/", // documentation (RFC 9637)
  "https://[100:0:0:1::1]/", // dummy prefix
  "https://[4000::1]/", // outside global unicast
  "https://192.88.99.1/", // 6to4 relay anycast
  "https://192.175.48.1/", // AS112
  "https://user:secret@hooks.example.com/",
];

for (const url of SSRF_URLS) {
  test(`a target the service must never call is refused at creation: ${url}`, async (t) => {
    await expectError(t, await rest(running.baseUrl, "POST", SUBSCRIBE, { event: "Order.Created", url }), 400, "invalid_argument", /url/);
    const listed = await rest(running.baseUrl, "GET", SUBSCRIBE);
    t.false(
      (listed.json.subscriptions as Array<{ url: string }>).some((s) => s.url.includes(new URL(url).hostname)),
      "nothing stored",
    );
  });
}

test("invalid UTF-8 in the body: 400", async (t) => {
  const response = await fetch(`${running.baseUrl}${SUBSCRIBE}`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: Buffer.from([0x7b, 0x22, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
  });
  t.is(response.status, 400);
  t.regex(((await response.json()) as { message: string }).message, /UTF-8/);
});

test("a wrong type where a string belongs (operator injection): 400", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "POST", SUBSCRIBE, { event: "Order.Created", url: { $ne: null } }),
    400,
    "invalid_argument",
  );
});

test("an unknown field: 400", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "POST", SUBSCRIBE, { event: "Order.Created", url: receiver.url, colour: "red" }),
    400,
    "invalid_argument",
  );
});

test("malformed and truncated JSON: 400", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "POST", SUBSCRIBE, '{"event": "Order.Created", "url": '),
    400,
    "invalid_argument",
    /not valid JSON/,
  );
  await expectError(t, await rest(running.baseUrl, "POST", SUBSCRIBE, "[1,2,3]"), 400, "invalid_argument", /JSON object/);
});

test("JSON nested thousands deep: 400", async (t) => {
  const deep = `{"event":${"[".repeat(5000)}${"]".repeat(5000)}}`;
  await expectError(t, await rest(running.baseUrl, "POST", SUBSCRIBE, deep), 400, "invalid_argument", /nests deeper/);
});

test("a wrong content type: 415", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "POST", SUBSCRIBE, "event=Order.Created", { ...auth, "content-type": "application/x-www-form-urlencoded" }),
    415,
    "invalid_argument",
    /application\/json/,
  );
});

test("a compressed body: 415 naming the encoding, not a decoding error", async (t) => {
  const gzipped = gzipSync(JSON.stringify({ event: "Order.Created", url: receiver.url }));
  const response = await fetch(`${running.baseUrl}${SUBSCRIBE}`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json", "content-encoding": "gzip" },
    body: gzipped,
  });
  await expectError(
    t,
    restAnswer(response.status, await response.text()),
    415,
    "invalid_argument",
    /Content-Encoding gzip is not supported/,
  );
});

/**
 * POSTs `body` as `rest` does, but on a connection no other test's request shares: the service may
 * cut a connection whose refused body it stops reading, and fetch's shared pool could meanwhile
 * have handed that connection to a request of another test.
 */
async function postOnItsOwnConnection(t: import("ava").ExecutionContext, path: string, body: string): ReturnType<typeof rest> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const headers = { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" };
  return new Promise((resolve, reject) => {
    const sent = request(`${running.baseUrl}${path}`, { method: "POST", agent, headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () => resolve(restAnswer(response.statusCode ?? 0, text)));
    });
    sent.on("error", reject);
    sent.end(body);
  });
}

test("a multi-megabyte body: 413, on REST and on the Connect path", async (t) => {
  const huge = JSON.stringify({ event: "Order.Created", url: receiver.url, description: "x".repeat(3 * 1024 * 1024) });
  await expectError(t, await postOnItsOwnConnection(t, SUBSCRIBE, huge), 413, "resource_exhausted", /larger than the limit/);
  const connect = await postOnItsOwnConnection(t, "/webhooks.v1.SubscriptionService/CreateSubscription", huge);
  await expectError(t, connect, 413, "resource_exhausted");
});

test("a sample for a URL that is not one of the caller's subscriptions: 400", async (t) => {
  await expectError(
    t,
    await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", {
      event: "Order.Created",
      url: "https://example.com/not-mine",
    }),
    400,
    "invalid_argument",
    /not the URL of one of your/,
  );
});

test("a sample of an event the URL's subscription does not take: 400 failed_precondition naming the event it takes", async (t) => {
  const url = "https://example.com/hooks/shipped-only";
  const created = await rest(running.baseUrl, "POST", SUBSCRIBE, { event: "Order.Shipped", url });
  t.is(created.status, 200, created.text);
  await expectError(
    t,
    await rest(running.baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", { event: "Order.Created", url }),
    400,
    "failed_precondition",
    /takes Order\.Shipped, not Order\.Created/,
  );
});

test("a wrong method on a REST path: 405 with Allow", async (t) => {
  const response = await fetch(`${running.baseUrl}/api/webhookSubscription`, { method: "PUT", headers: auth });
  t.is(response.status, 405);
  t.is(response.headers.get("allow"), "GET, POST");
});

test("an unknown path: 404 as a Connect error", async (t) => {
  await expectError(t, await rest(running.baseUrl, "GET", "/api/nothing-here"), 404, "not_found");
});
