import { createRegistry, type DescFile, type DescService, type Registry, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** A reflection request as both protocol versions shape it. */
type ReflectionRequest =
  | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
  | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  | { case: undefined; value?: undefined };

/** The answer, as both protocol versions shape it. */
type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: Array<{ name: string }> } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/**
 * What server reflection answers, from the descriptors protobuf-es
 * generated into src/gen: the services served, and each file with
 * everything it imports (so a client needs no proto file at all).
 */
export class ReflectionIndex {
  readonly #services: string[];
  readonly #files = new Map<string, DescFile>();
  readonly #registry: Registry;
  readonly #encoded = new Map<DescFile, Uint8Array>();

  constructor(services: readonly DescService[]) {
    this.#services = services.map((service) => service.typeName);
    const visit = (file: DescFile) => {
      // file.name drops the ".proto" that clients ask by.
      if (this.#files.has(file.proto.name)) return;
      this.#files.set(file.proto.name, file);
      for (const dependency of file.dependencies) visit(dependency);
    };
    for (const service of services) visit(service.file);
    this.#registry = createRegistry(...this.#files.values());
  }

  answer(request: ReflectionRequest): ReflectionAnswer {
    switch (request.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: this.#services.map((name) => ({ name })) } };
      case "fileByFilename":
        return this.#withImports(this.#files.get(request.value), `file ${request.value}`);
      case "fileContainingSymbol":
        return this.#withImports(this.#fileOf(request.value), `symbol ${request.value}`);
      case "fileContainingExtension": {
        const extendee = this.#registry.getMessage(request.value.containingType);
        const extension = extendee && this.#registry.getExtensionFor(extendee, request.value.extensionNumber);
        return this.#withImports(extension?.file, `extension ${request.value.extensionNumber} of ${request.value.containingType}`);
      }
      case "allExtensionNumbersOfType": {
        if (!this.#registry.getMessage(request.value)) return notFound(`message type ${request.value}`);
        const numbers: number[] = [];
        for (const type of this.#registry) {
          if (type.kind === "extension" && type.extendee.typeName === request.value) numbers.push(type.number);
        }
        return { case: "allExtensionNumbersResponse", value: { baseTypeName: request.value, extensionNumber: numbers } };
      }
      default:
        return { case: "errorResponse", value: { errorCode: Code.InvalidArgument, errorMessage: "no request in the message" } };
    }
  }

  /** The file defining a type, or a member of one (a method, a field, an enum value). */
  #fileOf(symbol: string): DescFile | undefined {
    const type = this.#registry.get(symbol);
    if (type) return type.file;
    const parent = symbol.slice(0, Math.max(0, symbol.lastIndexOf(".")));
    return parent ? this.#registry.get(parent)?.file : undefined;
  }

  #withImports(file: DescFile | undefined, what: string): ReflectionAnswer {
    if (!file) return notFound(what);
    const files = new Set<DescFile>();
    const visit = (next: DescFile) => {
      if (files.has(next)) return;
      files.add(next);
      for (const dependency of next.dependencies) visit(dependency);
    };
    visit(file);
    // The file asked for first, as other servers answer.
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: [...files].map((each) => this.#encode(each)) } };
  }

  #encode(file: DescFile): Uint8Array {
    let bytes = this.#encoded.get(file);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.#encoded.set(file, bytes);
    }
    return bytes;
  }
}

function notFound(what: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } };
}

/** The reflection services a client may ask, both protocol versions (grpcurl and Postman still ask v1alpha). */
export const REFLECTION_SERVICES = [v1.ServerReflection, v1alpha.ServerReflection] as const;

/** grpc.reflection.v1: one answer per request, in order, on the one stream. */
export function createReflectionV1(index: ReflectionIndex): ServiceImpl<typeof v1.ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield { validHost: request.host, originalRequest: request, messageResponse: index.answer(request.messageRequest) };
      }
    },
  };
}

/** grpc.reflection.v1alpha: the same protocol under its older name. */
export function createReflectionV1alpha(index: ReflectionIndex): ServiceImpl<typeof v1alpha.ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      for await (const request of requests) {
        yield { validHost: request.host, originalRequest: request, messageResponse: index.answer(request.messageRequest) };
      }
    },
  };
}
