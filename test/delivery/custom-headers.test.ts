import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import test from "ava";
import { createClient, publishEvent, registerEventType } from "../helpers/admin.js";
import { postSample, postSubscription } from "../helpers/calls.js";
import { Receiver } from "../helpers/receiver.js";
import { embeddedService, rest, serviceOn } from "../helpers/service.js";
import { type StoreTarget, storeTargets, testOn } from "../helpers/stores.js";

const EVENT = "Header.Tick";

async function setUp(base: string) {
  const owner = await createClient(base, "Headers");
  await registerEventType(base, EVENT, { samplePayload: { Sample: true } });
  return owner;
}

async function publish(base: string, clientId: string, n: number) {
  await publishEvent(base, clientId, EVENT, { n });
}

/** Every file under `dir`. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/**
 * Whether `text` is anywhere in what the store keeps: a pg_dump of the database, every document of
 * the MongoDB database, or the embedded database's files.
 */
async function storedInTheClear(target: StoreTarget, env: Record<string, string>, text: string): Promise<boolean> {
  if (target.name === "mongodb") {
    const { MongoClient } = await import("mongodb");
    const client = new MongoClient(env.DATABASE_URL as string);
    try {
      for (const { name } of await client.db().listCollections().toArray()) {
        const documents = await client.db().collection(name).find().toArray();
        if (JSON.stringify(documents).includes(text)) return true;
      }
      return false;
    } finally {
      await client.close();
    }
  }
  if (target.name === "postgres") {
    const { stdout } = await promisify(execFile)("pg_dump", ["--dbname", env.DATABASE_URL as string], { maxBuffer: 256 * 1024 * 1024 });
    return stdout.includes(text);
  }
  const needle = Buffer.from(text);
  for (const file of await filesUnder(env.DATA_DIR as string)) {
    if ((await readFile(file)).includes(needle)) return true;
  }
  return false;
}

for (const target of storeTargets()) {
  testOn(test, target)(
    `${target.name}: custom headers go with every delivery and sample, are sealed at rest and masked after creation`,
    async (t) => {
      const receiver = await Receiver.start();
      t.teardown(() => receiver.close());
      const secret = `secret-${randomBytes(8).toString("hex")}`;
      const marker = `description-${randomBytes(8).toString("hex")}`;
      const { service, baseUrl: base, storeEnv } = await serviceOn(t, target);
      const owner = await setUp(base);
      const created = await postSubscription(
        base,
        { event: EVENT, url: receiver.url, description: marker, headers: { "X-Api-Key": secret, "X-Tenant": "acme" } },
        owner.auth,
      );
      t.is(created.status, 200, created.text);
      t.deepEqual(created.json.headers, { "X-Api-Key": secret, "X-Tenant": "acme" }, "the creation's answer shows them once");
      const id = String(created.json.id);
      const read = await rest(base, "GET", `/api/webhookSubscription/${id}`, undefined, owner.auth);
      t.deepEqual(read.json.headers, { "X-Api-Key": "••••", "X-Tenant": "••••" }, "every later answer masks the values");
      const listed = await rest(base, "GET", "/api/webhookSubscription", undefined, owner.auth);
      t.false(listed.text.includes(secret), "nor does the list show them");

      const sample = await postSample(base, { event: EVENT, url: receiver.url }, owner.auth);
      t.is(sample.status, 200, sample.text);
      await publish(base, owner.id, 1);
      const [first, second] = await receiver.waitFor(2);
      for (const request of [first, second]) {
        t.is(request?.headers["x-api-key"], secret);
        t.is(request?.headers["x-tenant"], "acme");
        t.truthy(request?.headers["x-signature"], "signed as ever");
        t.is(request?.headers["content-type"], "application/json");
      }

      // An update without headers leaves them; one with headers replaces them all; {} removes them.
      const described = await rest(base, "PATCH", `/api/webhookSubscription/${id}`, { description: marker }, owner.auth);
      t.deepEqual(described.json.headers, { "X-Api-Key": "••••", "X-Tenant": "••••" });
      const replaced = await rest(base, "PATCH", `/api/webhookSubscription/${id}`, { headers: { "X-Tenant": "beta" } }, owner.auth);
      t.is(replaced.status, 200, replaced.text);
      t.deepEqual(replaced.json.headers, { "X-Tenant": "••••" }, "the update's answer masks them too");
      await publish(base, owner.id, 2);
      const [, , third] = await receiver.waitFor(3);
      t.is(third?.headers["x-tenant"], "beta");
      t.is(third?.headers["x-api-key"], undefined, "a header left out of the new map is gone");
      const cleared = await rest(base, "PATCH", `/api/webhookSubscription/${id}`, { headers: {} }, owner.auth);
      t.deepEqual(cleared.json.headers ?? {}, {}, "no headers left");
      await publish(base, owner.id, 3);
      const [, , , fourth] = await receiver.waitFor(4);
      t.is(fourth?.headers["x-tenant"], undefined);
      // Put the secret back, so what is stored holds it (sealed) at the end.
      t.is((await rest(base, "PATCH", `/api/webhookSubscription/${id}`, { headers: { "X-Api-Key": secret } }, owner.auth)).status, 200);
      await service.stop();
      t.true(await storedInTheClear(target, storeEnv, marker), "the check finds what is stored in the clear");
      t.false(await storedInTheClear(target, storeEnv, secret), "no header value is stored in the clear");
    },
  );
}

test("bad headers are refused with 400 naming the header and the problem", async (t) => {
  const { baseUrl: base } = await embeddedService(t);
  const owner = await setUp(base);
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ "X-Signature": "forged" }, /headers\."X-Signature": the service sets this header itself/],
    [{ "content-type": "text/plain" }, /headers\."content-type": the service sets this header itself/],
    [{ "Webhook-Id": "x" }, /headers\."Webhook-Id": the service sets this header itself/],
    [{ Traceparent: "x" }, /headers\."Traceparent": the service sets this header itself/],
    [{ "Transfer-Encoding": "chunked" }, /headers\."Transfer-Encoding": the service sets this header itself/],
    [{ "Bad Name": "x" }, /headers\."Bad Name": not a header name/],
    [{ "X-Split": "a\r\nX-Injected: 1" }, /headers\."X-Split": the value may hold printable ASCII characters only/],
    [{ "X-Nul": "a\u0000b" }, /headers\."X-Nul": the value may hold printable ASCII characters only/],
    [{ "X-Long": "v".repeat(1025) }, /headers\."X-Long": the value is longer than 1024 characters/],
    [Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, "v"])), /headers: at most 20 headers, not 21/],
  ];
  for (const [headers, message] of cases) {
    const refused = await postSubscription(base, { event: EVENT, url: "https://example.com/hook", headers }, owner.auth);
    t.is(refused.status, 400, refused.text);
    t.is(refused.json.code, "invalid_argument");
    t.regex(String(refused.json.message), message);
  }
  const created = await postSubscription(base, { event: EVENT, url: "https://example.com/hook" }, owner.auth);
  t.is(created.status, 200, created.text);
  t.deepEqual(created.json.headers ?? {}, {}, "none given, none shown");
  const notString = await rest(base, "PATCH", `/api/webhookSubscription/${created.json.id}`, { headers: { "X-Count": 5 } }, owner.auth);
  t.is(notString.status, 400, notString.text);
  t.regex(String(notString.json.message), /headers\."X-Count": the value must be a string/);
  const reserved = await rest(base, "PATCH", `/api/webhookSubscription/${created.json.id}`, { headers: { "X-JobId": "1" } }, owner.auth);
  t.is(reserved.status, 400, reserved.text);
  t.regex(String(reserved.json.message), /headers\."X-JobId": the service sets this header itself/);
});
