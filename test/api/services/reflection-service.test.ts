import { create, createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import test from "ava";
import { ALL_SERVICES } from "../../../src/api/routes.js";
import { ReflectionIndex } from "../../../src/api/services/reflection-service.js";
import { SERVED_SERVICES } from "../../helpers/grpc.js";

const index = new ReflectionIndex(ALL_SERVICES);

test("lists every service the port serves, health and reflection included", (t) => {
  const answer = index.answer({ case: "listServices", value: "" });
  t.is(answer.case, "listServicesResponse");
  const names = answer.case === "listServicesResponse" ? answer.value.service.map((service) => service.name) : [];
  t.deepEqual(names.sort(), SERVED_SERVICES);
});

test("a symbol's file comes with everything it imports: a client can build the whole schema from the answer", (t) => {
  for (const symbol of ["webhooks.v1.EventService", "webhooks.v1.EventService.PublishEvent"]) {
    const answer = index.answer({ case: "fileContainingSymbol", value: symbol });
    if (answer.case !== "fileDescriptorResponse") return t.fail(`${symbol}: ${answer.case}`);
    const files = answer.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
    t.is(files[0]?.name, "webhooks/v1/event_service.proto");
    t.true(files.some((file) => file.name === "google/api/annotations.proto"));
    // Dependencies first, as a FileDescriptorSet lists them.
    const byName = new Map(files.map((file) => [file.name, file]));
    const ordered: typeof files = [];
    const visit = (name: string) => {
      const file = byName.get(name);
      if (!file || ordered.includes(file)) return;
      for (const dependency of file.dependency) visit(dependency);
      ordered.push(file);
    };
    visit(files[0]?.name ?? "");
    t.is(ordered.length, files.length, "every file answered is needed");
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: ordered }));
    t.truthy(registry.getService("webhooks.v1.EventService")?.methods.find((method) => method.name === "PublishEvent"));
  }
});

test("by file name, by extension, and extension numbers; an unknown name is not_found", (t) => {
  t.is(index.answer({ case: "fileByFilename", value: "grpc/health/v1/health.proto" }).case, "fileDescriptorResponse");
  const http = index.answer({
    case: "fileContainingExtension",
    value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 72295728 },
  });
  t.is(http.case, "fileDescriptorResponse");
  const numbers = index.answer({ case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" });
  t.deepEqual(numbers.case === "allExtensionNumbersResponse" ? numbers.value.extensionNumber : [], [72295728]);
  t.like(index.answer({ case: "fileContainingSymbol", value: "no.such.Service" }), { case: "errorResponse", value: { errorCode: 5 } });
  t.like(index.answer({ case: "fileByFilename", value: "nope.proto" }), { case: "errorResponse", value: { errorCode: 5 } });
});
