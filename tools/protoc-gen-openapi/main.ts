// protoc-gen-openapi: buf.gen.yaml runs it with `node --import tsx`, so it
// needs nothing built; it reads a CodeGeneratorRequest on stdin.
import { runNodeJs } from "@bufbuild/protoplugin";
import { protocGenOpenApi } from "./plugin.js";

runNodeJs(protocGenOpenApi);
