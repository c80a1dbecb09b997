import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { create, fromBinary } from "@bufbuild/protobuf";
import { CodeGeneratorRequestSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { validate } from "@readme/openapi-parser";
import test, { type ExecutionContext } from "ava";
import { protocGenOpenApi } from "../../tools/protoc-gen-openapi/plugin.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "node_modules", ".bin");
// protoc-gen-es is found on PATH, as under `npm run generate`.
const env = { ...process.env, PATH: `${BIN}${delimiter}${process.env.PATH ?? ""}` };
const run = promisify(execFile);

/** The plugin as buf.gen.yaml runs it. */
const PLUGIN = ["node", "--import", "tsx", "tools/protoc-gen-openapi/main.ts"];

// biome-ignore lint/suspicious/noExplicitAny: a JSON document whose shape the assertions check
type Json = Record<string, any>;

async function temporaryDirectory(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-openapi-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function filesUnder(dir: string): Promise<Map<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = new Map<string, string>();
  for (const entry of entries.filter((each) => each.isFile())) {
    const path = join(entry.parentPath, entry.name);
    files.set(relative(dir, path), await readFile(path, "utf8"));
  }
  return files;
}

/** A buf input of `protos` (path → text) next to a copy of proto/google. */
async function protoInput(t: ExecutionContext, protos: Record<string, string>): Promise<{ dir: string; input: string }> {
  const dir = await temporaryDirectory(t);
  const input = join(dir, "proto");
  await cp(join(ROOT, "proto", "google"), join(input, "google"), { recursive: true });
  for (const [path, text] of Object.entries(protos)) {
    await mkdir(dirname(join(input, path)), { recursive: true });
    await writeFile(join(input, path), text);
  }
  return { dir, input };
}

/** Runs the plugin alone over `protos`, through buf, and returns its document. */
async function generate(t: ExecutionContext, protos: Record<string, string>, options: string[] = []): Promise<Json> {
  const { dir, input } = await protoInput(t, protos);
  const template = { version: "v2", plugins: [{ local: PLUGIN, out: join(dir, "out"), strategy: "all", opt: options }] };
  await run(join(BIN, "buf"), ["generate", input, "--template", JSON.stringify(template)], { cwd: ROOT, env });
  return JSON.parse(await readFile(join(dir, "out", "openapi.json"), "utf8")) as Json;
}

test("src/gen is what `buf generate` makes from proto/ now (run `npm run generate` when this fails)", async (t) => {
  const dir = await temporaryDirectory(t);
  await run(join(BIN, "buf"), ["generate", "--output", dir], { cwd: ROOT, env });
  const fresh = await filesUnder(join(dir, "src", "gen"));
  const committed = await filesUnder(join(ROOT, "src", "gen"));
  t.true(fresh.has("openapi.json"));
  t.deepEqual([...committed.keys()].sort(), [...fresh.keys()].sort(), "the same files");
  const stale = [...fresh].filter(([path, text]) => committed.get(path) !== text).map(([path]) => path);
  t.deepEqual(stale, [], "the same contents");
});

const KITCHEN = "kitchen/v1/kitchen.proto";

test("every proto3 JSON shape and google.api.http form of the kitchen-sink proto", async (t) => {
  const text = await readFile(join(ROOT, "test", "openapi", "proto", KITCHEN), "utf8");
  const document = await generate(t, { [KITCHEN]: text }, ["admin_service=kitchen.v1.AdminKitchenService"]);
  const result = await validate(structuredClone(document) as never);
  t.true(result.valid, JSON.stringify(result, null, 2));

  const { paths } = document;
  t.deepEqual(Object.keys(paths).sort(), ["/v1/reset", "/v1/shelves/{shelf}/sinks/{name}", "/v1/sinks/{name}", "/v1/sinks/{name}/wash"]);
  const names = (operation: Json, where: string) =>
    (operation.parameters ?? []).filter((p: Json) => p.in === where).map((p: Json) => p.name);

  // No body: the path binds `name`, every other field is a query parameter.
  const get = paths["/v1/sinks/{name}"].get;
  t.is(get.description, "Reads one sink.");
  t.deepEqual(names(get, "path"), ["name"]);
  t.deepEqual(names(get, "query"), ["shelf", "revision", "color", "asOf", "minDepth"]);
  t.is(get.requestBody, undefined);
  // An additional binding: its own operation, `shelf` now in the path.
  const onShelf = paths["/v1/shelves/{shelf}/sinks/{name}"].get;
  t.is(onShelf.operationId, "KitchenService_GetSink_1");
  t.deepEqual(names(onShelf, "path"), ["shelf", "name"]);
  t.deepEqual(names(onShelf, "query"), ["revision", "color", "asOf", "minDepth"]);
  const query = Object.fromEntries(get.parameters.map((p: Json) => [p.name, p.schema]));
  t.deepEqual(query.revision, { type: "string", format: "int64", pattern: "^-?[0-9]+$" });
  t.deepEqual(query.color, { $ref: "#/components/schemas/kitchen.v1.Color" });
  t.deepEqual(query.asOf, { type: "string", format: "date-time" });
  t.deepEqual(query.minDepth, { type: "integer", format: "int32" });

  // `body: "sink"` and `response_body: "sink"`; the gateway reads no query string then.
  const put = paths["/v1/sinks/{name}"].put;
  t.deepEqual(names(put, "query"), []);
  t.deepEqual(put.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/kitchen.v1.Sink" });
  t.deepEqual(put.responses["200"].content["application/json"].schema, { $ref: "#/components/schemas/kitchen.v1.Sink" });
  t.truthy(put.responses["413"]);

  // `body: "*"`: the request less its path fields; a deprecated method.
  const wash = paths["/v1/sinks/{name}/wash"].post;
  t.true(wash.deprecated);
  const washBody = wash.requestBody.content["application/json"].schema;
  t.deepEqual(Object.keys(washBody.properties), ["duration", "rinse"]);
  t.deepEqual(washBody.properties.duration, { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", examples: ["1.5s"] });
  t.deepEqual(wash.responses["200"].content["application/json"].schema, { type: "object" });

  // Nothing to send: no request body, and no 413/415 to meet.
  const reset = paths["/v1/reset"].post;
  t.is(reset.requestBody, undefined);
  t.is(reset.responses["415"], undefined);
  t.deepEqual(reset.security, [{ adminToken: [] }]);
  t.deepEqual(get.security, [{ apiKey: [] }]);
  t.deepEqual(Object.keys(document.components.securitySchemes).sort(), ["adminToken", "apiKey"]);
  t.deepEqual(
    document.tags.map((tag: Json) => tag.name),
    ["KitchenService", "AdminKitchenService"],
  );

  const schemas = document.components.schemas;
  const sink = schemas["kitchen.v1.Sink"];
  t.is(sink.description, "A sink with one field of each kind.");
  const field = sink.properties;
  t.deepEqual(field.photo, { type: "string", contentEncoding: "base64" });
  t.deepEqual(field.clean, { type: "boolean" });
  t.deepEqual(field.taps, { type: "integer", minimum: 0, maximum: 4_294_967_295 });
  t.deepEqual(field.volume, { type: "string", format: "int64", pattern: "^-?[0-9]+$" });
  t.deepEqual(field.serial, { type: "string", format: "uint64", pattern: "^[0-9]+$" });
  t.deepEqual(field.width.anyOf, [
    { type: "number", format: "double" },
    { type: "string", enum: ["NaN", "Infinity", "-Infinity"] },
  ]);
  t.deepEqual(field.tags, { type: "array", items: { type: "string" } });
  t.deepEqual(field.nestedSinks, { type: "array", items: { $ref: "#/components/schemas/kitchen.v1.Sink" } }, "recursion by reference");
  t.deepEqual(field.counters, { type: "object", additionalProperties: { type: "string", format: "int64", pattern: "^-?[0-9]+$" } });
  t.deepEqual(field.colorsBySlot, {
    type: "object",
    additionalProperties: { $ref: "#/components/schemas/kitchen.v1.Color" },
    propertyNames: { pattern: "^-?[0-9]+$" },
  });
  t.deepEqual(field.properties, { type: "object", additionalProperties: true }, "Struct: any JSON object");
  t.deepEqual(field.anything, {}, "Value: any JSON");
  t.deepEqual(field.list, { type: "array", items: {} });
  t.deepEqual(field.maybeLabel, { type: "string" }, "wrappers are their scalar");
  t.deepEqual(field.maybeClean, { type: "boolean" });
  t.deepEqual(field.maybeSerial, { type: "string", format: "uint64", pattern: "^[0-9]+$" });
  t.is(field.mask.type, "string");
  t.deepEqual(field.extra.required, ["@type"]);
  t.deepEqual(field.nothing, { type: "null" });
  t.deepEqual(field.nickname, { type: "string" }, "proto3 optional is a plain field in JSON");
  t.regex(field.plug.description, /oneof `drain`/);
  t.is(field.plug.$ref, "#/components/schemas/kitchen.v1.Sink.Plug");
  t.true(field.oldName.deprecated);
  t.deepEqual(sink.allOf, [
    {
      not: {
        anyOf: [{ required: ["drainKind", "plug"] }, { required: ["drainKind", "drainSize"] }, { required: ["plug", "drainSize"] }],
      },
    },
  ]);
  t.is(schemas["kitchen.v1.Sink.Plug"].description, "A plug for the drain.");
  t.deepEqual(schemas["kitchen.v1.Color"].enum, ["COLOR_UNSPECIFIED", "COLOR_WHITE", "COLOR_STEEL"]);
  t.regex(schemas["kitchen.v1.Color"].description, /How a sink looks\.[\s\S]*`COLOR_WHITE`: Plain white\./);
  t.is(schemas["kitchen.v1.GetSinkRequest"], undefined, "a request read from path and query needs no schema");
});

const REFUSED: Array<[title: string, rpc: string, messages: string, message: RegExp]> = [
  [
    "a REST path on a streaming RPC (streaming RPCs are served over gRPC, Connect and gRPC-Web only)",
    'rpc Watch(WatchRequest) returns (stream WatchRequest) { option (google.api.http) = {get: "/v1/things:watch"}; }',
    "message WatchRequest { string name = 1; }",
    /a server_streaming RPC cannot have a REST path/,
  ],
  [
    "a bool from the query string",
    'rpc List(ListRequest) returns (ListRequest) { option (google.api.http) = {get: "/v1/things"}; }',
    "message ListRequest { bool include_hidden = 1; }",
    /include_hidden \(scalar\) cannot come from the query string/,
  ],
  [
    "a custom verb",
    'rpc Wash(WashRequest) returns (WashRequest) { option (google.api.http) = {post: "/v1/things/{name}:wash" body: "*"}; }',
    "message WashRequest { string name = 1; }",
    /path segment "\{name\}:wash" is not supported/,
  ],
  [
    "a nested path variable",
    'rpc Get(GetRequest) returns (GetRequest) { option (google.api.http) = {get: "/v1/things/{thing.name}"}; }',
    "message GetRequest { Thing thing = 1; } message Thing { string name = 1; }",
    /path variable \{thing\.name\} is not a field/,
  ],
  [
    "a scalar body field",
    'rpc Put(PutRequest) returns (PutRequest) { option (google.api.http) = {put: "/v1/things" body: "name"}; }',
    "message PutRequest { string name = 1; }",
    /accepts only a JSON object as the body/,
  ],
];

test("the plugin refuses what the REST gateway cannot serve, naming the method and why", async (t) => {
  // One proto package per case, compiled by one `buf build`; the plugin then runs in-process on each.
  const protos = Object.fromEntries(
    REFUSED.map(([, rpc, messages], index) => [
      `refused${index}/v1/refused.proto`,
      `syntax = "proto3";\npackage refused${index}.v1;\nimport "google/api/annotations.proto";\nservice RefusedService { ${rpc} }\n${messages}\n`,
    ]),
  );
  const { dir, input } = await protoInput(t, protos);
  const image = join(dir, "image.binpb");
  await run(join(BIN, "buf"), ["build", input, "--as-file-descriptor-set", "-o", image], { cwd: ROOT, env });
  const { file } = fromBinary(FileDescriptorSetSchema, await readFile(image));
  for (const [index, [title, , , message]] of REFUSED.entries()) {
    const request = create(CodeGeneratorRequestSchema, { fileToGenerate: [`refused${index}/v1/refused.proto`], protoFile: file });
    t.throws(() => protocGenOpenApi.run(request), { message }, title);
  }
});
