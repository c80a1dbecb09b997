import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { ValidationError } from "./errors.js";
import type { JsonObject } from "./model.js";

// addUsedSchema: false keeps ajv from registering every `$id` it compiles, so
// recompiling a schema (after a catalog refresh) neither throws nor piles up.
const draft07 = new Ajv({ allErrors: true, strict: false, addUsedSchema: false });
const draft2020 = new Ajv2020({ allErrors: true, strict: false, addUsedSchema: false });
/** Compiled validators by schema text: the catalog hands out fresh objects on every refresh. */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 1000;

/** Compiles a JSON Schema (draft-07 when it says so, else 2020-12); a bad schema is a ValidationError. */
export function compileSchema(schema: JsonObject): ValidateFunction {
  const text = JSON.stringify(schema);
  const cached = compiled.get(text);
  if (cached) return cached;
  const ajv = typeof schema.$schema === "string" && schema.$schema.includes("draft-07") ? draft07 : draft2020;
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new ValidationError(`jsonSchema is not a valid JSON Schema: ${(error as Error).message}`, "jsonSchema");
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(text, validate);
  return validate;
}

/** Throws a ValidationError listing what in `payload` breaks the event's schema. */
export function assertPayloadMatches(event: string, schema: JsonObject, payload: JsonObject): void {
  const validate = compileSchema(schema);
  if (validate(payload)) return;
  const problems = (validate.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`)
    .join("; ");
  throw new ValidationError(`payload does not match the schema of ${event}: ${problems}`, "payload");
}
