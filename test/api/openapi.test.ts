import { validate } from "@readme/openapi-parser";
import test from "ava";
import { SERVICES } from "../../src/api/routes.js";
import { readHttpBindings } from "../../src/api/transport/http-rules.js";
import generated from "../../src/gen/openapi.json" with { type: "json" };
import { adminAuth } from "../helpers/admin.js";
import { OpenApiChecker } from "../helpers/openapi.js";
import { API_KEY, rest, sharedService } from "../helpers/service.js";

const running = sharedService(test);
const checker = new OpenApiChecker(generated);

async function servedDocument(): Promise<Record<string, unknown>> {
  const response = await fetch(`${running.baseUrl}/openapi.json`);
  return (await response.json()) as Record<string, unknown>;
}

test("GET /openapi.json serves the generated document without credentials, revalidated by its ETag", async (t) => {
  const response = await fetch(`${running.baseUrl}/openapi.json`);
  t.is(response.status, 200);
  t.is(response.headers.get("content-type"), "application/json");
  t.is(response.headers.get("cache-control"), "no-cache");
  const etag = response.headers.get("etag") ?? "";
  t.regex(etag, /^"[\w-]{43}"$/);
  const text = await response.text();
  t.is(response.headers.get("content-length"), String(Buffer.byteLength(text)));
  t.deepEqual(JSON.parse(text), generated);

  const unchanged = await fetch(`${running.baseUrl}/openapi.json`, { headers: { "if-none-match": etag } });
  t.is(unchanged.status, 304);
  t.is(unchanged.headers.get("etag"), etag);
  t.is(await unchanged.text(), "");
  const stale = await fetch(`${running.baseUrl}/openapi.json`, { headers: { "if-none-match": '"something-else"' } });
  t.is(stale.status, 200);
  t.deepEqual(await stale.json(), generated);

  const head = await fetch(`${running.baseUrl}/openapi.json`, { method: "HEAD" });
  t.is(head.status, 200);
  t.is(head.headers.get("content-length"), String(Buffer.byteLength(text)));
  t.is(await head.text(), "");

  const post = await rest(running.baseUrl, "POST", "/openapi.json", {});
  t.is(post.status, 405);
  t.is(post.json.code, "unimplemented");
});

test("the served document is valid OpenAPI 3.1 (@readme/openapi-parser)", async (t) => {
  const document = await servedDocument();
  t.is(document.openapi, "3.1.0");
  // validate() dereferences in place: give it its own copy.
  const result = await validate(structuredClone(document) as never);
  t.true(result.valid, JSON.stringify(result, null, 2));
  t.deepEqual(result.warnings, []);
});

test("the document has exactly the REST routes the gateway serves, each for the same RPC", (t) => {
  const served = readHttpBindings(SERVICES).map((binding) => {
    const path = binding.segments.map((segment) => {
      if (typeof segment === "string") return segment;
      const field = binding.method.input.fields.find((each) => each.name === segment.field);
      return `{${field?.jsonName}}`;
    });
    return `${binding.httpMethod} /${path.join("/")} ${binding.method.parent.name}_${binding.method.name}`;
  });
  const documented = checker.operations.map(
    ({ method, template, operation }) => `${method} ${template} ${String(operation.operationId).replace(/_\d+$/, "")}`,
  );
  t.true(served.length > 0);
  t.deepEqual(
    {
      undocumented: served.filter((route) => !documented.includes(route)),
      notServed: documented.filter((route) => !served.includes(route)),
    },
    { undocumented: [], notServed: [] },
  );
  t.is(documented.length, served.length, "one operation per route");
});

test("each operation names the credential the service takes for it: the other one and none get 401", async (t) => {
  const credentials = { apiKey: { authorization: `Bearer ${API_KEY}` }, adminToken: adminAuth };
  for (const found of checker.operations) {
    const scheme = Object.keys((found.operation.security as Array<Record<string, unknown>>)[0] ?? {})[0] as keyof typeof credentials;
    t.truthy(credentials[scheme], `${found.template}: security scheme ${scheme}`);
    // Any value fills a path variable: authentication comes before any lookup.
    const path = found.template.replace(/\{[^}]+\}/g, "does-not-exist");
    const body = found.operation.requestBody ? {} : undefined;
    const label = `${found.method} ${found.template}`;
    const accepted = await rest(running.baseUrl, found.method, path, body, credentials[scheme]);
    t.not(accepted.status, 401, `${label} with its ${scheme}: ${accepted.text}`);
    const other = scheme === "apiKey" ? "adminToken" : "apiKey";
    for (const headers of [credentials[other], {}]) {
      const refused = await rest(running.baseUrl, found.method, path, body, headers);
      t.is(refused.status, 401, `${label} with ${Object.keys(headers).length ? other : "no credential"}`);
      t.deepEqual(checker.check(found, refused.status, refused.json), [], label);
    }
  }
});
