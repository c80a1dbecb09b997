import { create, createFileRegistry, protoInt64 } from "@bufbuild/protobuf";
import { CodeGeneratorResponse_Feature, CodeGeneratorResponseSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import type { Plugin } from "@bufbuild/protoplugin";
import { buildDocument, type DocumentOptions } from "./document.js";

const OUTPUT_FILE = "openapi.json";

/**
 * Options, each `key=value`: `title`, `version` (info.version), `license`
 * (info.license, an SPDX identifier) and `admin_service=<package.Service>`,
 * once per service guarded by the admin token.
 */
function parseOptions(parameter: string): DocumentOptions {
  let title = "API";
  let version = "1";
  let license: string | undefined;
  const adminServices = new Set<string>();
  for (const option of parameter.split(",").filter((each) => each !== "")) {
    const [key = "", value = ""] = option.split(/=(.*)/s, 2);
    if (key === "title") title = value;
    else if (key === "version") version = value;
    else if (key === "license") license = value;
    else if (key === "admin_service") adminServices.add(value);
    else throw new Error(`unknown option ${JSON.stringify(option)} (known: title, version, license, admin_service)`);
  }
  return { title, version, adminServices, ...(license ? { license } : {}) };
}

/**
 * One OpenAPI 3.1 document, `openapi.json`, for the services of all the files
 * to generate: run it with `strategy: all`.
 */
export const protocGenOpenApi: Plugin = {
  name: "protoc-gen-openapi",
  version: "1",
  run(request) {
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const services = request.fileToGenerate.flatMap((name) => registry.getFile(name)?.services ?? []);
    const document = buildDocument(services, parseOptions(request.parameter));
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: protoInt64.parse(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: OUTPUT_FILE, content: `${JSON.stringify(document, null, 2)}\n` }],
    });
  },
};
