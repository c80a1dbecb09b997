import { type DescFile, type DescMethod, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import type { GenExtension } from "@bufbuild/protobuf/codegenv2";
import type { MethodOptions } from "@bufbuild/protobuf/wkt";
import type { HttpRule } from "../../gen/google/api/http_pb.js";

/** One REST binding declared in the proto with `option (google.api.http)`. */
export interface HttpBinding {
  httpMethod: string;
  /** Literal segments as strings, variables as `{ field }`. */
  segments: ReadonlyArray<string | { field: string }>;
  /** "" (no body), "*" (the whole request) or the request field the body fills. */
  body: string;
  /** The response field sent as the body; "" for the whole response. */
  responseBody: string;
  method: DescMethod;
  /** The Connect procedure path, `/package.Service/Method`. */
  procedure: string;
}

function parseTemplate(template: string): HttpBinding["segments"] {
  return template
    .split("/")
    .filter((segment) => segment !== "")
    .map((segment) => {
      const variable = /^\{([a-z_][a-z0-9_.]*)(?:=\*)?\}$/i.exec(segment);
      return variable?.[1] ? { field: variable[1] } : segment;
    });
}

type HttpExtension = GenExtension<MethodOptions, HttpRule>;

/**
 * The `google.api.http` extension as the services' own files import it. It is
 * looked up in the descriptors rather than imported from src/gen so that this
 * file also runs inside protoc-gen-openapi, which must not depend on what
 * `buf generate` is about to replace.
 */
function findHttpExtension(file: DescFile, visited = new Set<DescFile>()): HttpExtension | undefined {
  if (visited.has(file)) return undefined;
  visited.add(file);
  const extension = file.extensions.find((each) => each.typeName === "google.api.http");
  if (extension) return extension as HttpExtension;
  for (const dependency of file.dependencies) {
    const found = findHttpExtension(dependency, visited);
    if (found) return found;
  }
  return undefined;
}

/** Reads every `google.api.http` rule (and additional bindings) of the services. */
export function readHttpBindings(services: readonly DescService[]): HttpBinding[] {
  const bindings: HttpBinding[] = [];
  for (const service of services) {
    const http = findHttpExtension(service.file);
    if (!http) continue;
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const rule = getOption(method, http);
      for (const each of [rule, ...rule.additionalBindings]) {
        const { case: verb, value } = each.pattern;
        if (verb === undefined || verb === "custom") continue;
        bindings.push({
          httpMethod: verb.toUpperCase(),
          segments: parseTemplate(value),
          body: each.body,
          responseBody: each.responseBody || rule.responseBody,
          method,
          procedure: `/${service.typeName}/${method.name}`,
        });
      }
    }
  }
  // Literal segments win over variables: `/x/events` before `/x/{id}`.
  const rank = (b: HttpBinding) => b.segments.map((s) => (typeof s === "string" ? "0" : "1")).join("");
  return bindings.sort((a, b) => rank(a).localeCompare(rank(b)));
}

/** The path variables if `path` matches the binding's template. */
export function matchPath(binding: HttpBinding, pathSegments: readonly string[]): Record<string, string> | undefined {
  if (binding.segments.length !== pathSegments.length) return undefined;
  const variables: Record<string, string> = {};
  for (const [index, segment] of binding.segments.entries()) {
    const actual = pathSegments[index] as string;
    if (typeof segment === "string") {
      if (segment !== actual) return undefined;
    } else {
      variables[segment.field] = actual;
    }
  }
  return variables;
}
