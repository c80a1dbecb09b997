import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { getComments } from "@bufbuild/protoplugin";

/** A JSON Schema (draft 2020-12, as OpenAPI 3.1 uses it). */
export type JsonSchema = { [keyword: string]: unknown };

const INT64_PATTERN = "^-?[0-9]+$";

/** Scalars as the proto3 JSON mapping writes them: 64-bit integers as strings, bytes as base64. */
function scalarSchema(type: ScalarType): JsonSchema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0, maximum: 4_294_967_295 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64", pattern: INT64_PATTERN };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "uint64", pattern: "^[0-9]+$" };
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      // Non-finite values are written as these strings.
      return {
        anyOf: [
          { type: "number", format: type === ScalarType.FLOAT ? "float" : "double" },
          { type: "string", enum: ["NaN", "Infinity", "-Infinity"] },
        ],
      };
  }
}

const WRAPPED_SCALARS: Record<string, ScalarType> = {
  "google.protobuf.DoubleValue": ScalarType.DOUBLE,
  "google.protobuf.FloatValue": ScalarType.FLOAT,
  "google.protobuf.Int64Value": ScalarType.INT64,
  "google.protobuf.UInt64Value": ScalarType.UINT64,
  "google.protobuf.Int32Value": ScalarType.INT32,
  "google.protobuf.UInt32Value": ScalarType.UINT32,
  "google.protobuf.BoolValue": ScalarType.BOOL,
  "google.protobuf.StringValue": ScalarType.STRING,
  "google.protobuf.BytesValue": ScalarType.BYTES,
};

/** Well-known types with their own JSON form, written inline rather than as components. */
function wellKnownSchema(typeName: string): JsonSchema | undefined {
  const wrapped = WRAPPED_SCALARS[typeName];
  if (wrapped !== undefined) return scalarSchema(wrapped);
  switch (typeName) {
    case "google.protobuf.Timestamp":
      return { type: "string", format: "date-time" };
    case "google.protobuf.Duration":
      return { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", examples: ["1.5s"] };
    case "google.protobuf.FieldMask":
      return { type: "string", description: "Comma-separated field paths in lowerCamelCase." };
    case "google.protobuf.Struct":
      return { type: "object", additionalProperties: true };
    case "google.protobuf.Value":
      return {};
    case "google.protobuf.ListValue":
      return { type: "array", items: {} };
    case "google.protobuf.Empty":
      return { type: "object" };
    case "google.protobuf.Any":
      return { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"], additionalProperties: true };
  }
  return undefined;
}

/**
 * Whether the REST gateway can fill the field from a path variable or a query
 * parameter: it copies their text into the request as a JSON string, which
 * protobuf's JSON parser reads into numbers, enums (by name), bytes and the
 * string-shaped well-known types, but not into a bool, a list, a map or a
 * message.
 */
export function readableFromString(field: DescField): boolean {
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar !== ScalarType.BOOL;
    case "enum":
      return field.enum.typeName !== "google.protobuf.NullValue";
    case "message": {
      const name = field.message.typeName;
      const wrapped = WRAPPED_SCALARS[name];
      if (wrapped !== undefined) return wrapped !== ScalarType.BOOL;
      return ["google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask"].includes(name);
    }
    default:
      return false;
  }
}

/** Whether the field's JSON is an object: a map, or a message without a scalar or list form. */
export function writtenAsObject(field: DescField): boolean {
  if (field.fieldKind === "map") return true;
  if (field.fieldKind !== "message") return false;
  const wellKnown = wellKnownSchema(field.message.typeName);
  return wellKnown === undefined || wellKnown.type === "object";
}

export function commentOf(desc: Parameters<typeof getComments>[0]): string | undefined {
  const comments = getComments(desc);
  const text = (comments.leading ?? comments.trailing ?? "").trim();
  return text === "" ? undefined : text.replace(/^ /gm, "");
}

function withDescription(schema: JsonSchema, description: string | undefined): JsonSchema {
  return description === undefined ? schema : { ...schema, description };
}

function mapKeySchema(key: ScalarType): JsonSchema | undefined {
  if (key === ScalarType.STRING) return undefined;
  if (key === ScalarType.BOOL) return { enum: ["true", "false"] };
  return { pattern: INT64_PATTERN };
}

/**
 * The JSON Schemas of messages and enums in the proto3 JSON mapping
 * (lowerCamelCase names, enums by name), gathered as the document refers to
 * them: `ref()` answers a `$ref` and defines the component once.
 */
export class ComponentSchemas {
  readonly #schemas = new Map<string, JsonSchema>();

  /** components.schemas, sorted by name so the document does not depend on traversal order. */
  toObject(): Record<string, JsonSchema> {
    return Object.fromEntries([...this.#schemas].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** A message's schema: inline for a well-known type with its own JSON form, else a reference. */
  message(desc: DescMessage): JsonSchema {
    const wellKnown = wellKnownSchema(desc.typeName);
    if (wellKnown) return wellKnown;
    this.#define(desc.typeName, () => this.object(desc));
    return { $ref: `#/components/schemas/${desc.typeName}` };
  }

  /** A message as an inline object, leaving out `omit` (fields the path already binds). */
  object(desc: DescMessage, omit: ReadonlySet<DescField> = new Set()): JsonSchema {
    const fields = desc.fields.filter((field) => !omit.has(field));
    const properties = Object.fromEntries(fields.map((field) => [field.jsonName, this.field(field)]));
    // A oneof is written as its members; at most one of them may be present.
    const atMostOne = desc.oneofs
      .map((oneof) => oneof.fields.filter((field) => !omit.has(field)).map((field) => field.jsonName))
      .filter((names) => names.length > 1)
      .map((names) => ({ not: { anyOf: pairs(names).map((pair) => ({ required: pair })) } }));
    return withDescription({ type: "object", properties, ...(atMostOne.length > 0 ? { allOf: atMostOne } : {}) }, commentOf(desc));
  }

  field(field: DescField): JsonSchema {
    let schema: JsonSchema;
    switch (field.fieldKind) {
      case "scalar":
        schema = scalarSchema(field.scalar);
        break;
      case "enum":
        schema = this.#enum(field.enum);
        break;
      case "message":
        schema = this.message(field.message);
        break;
      case "list":
        schema = { type: "array", items: this.#element(field.listKind, field) };
        break;
      case "map": {
        const keys = mapKeySchema(field.mapKey);
        schema = { type: "object", additionalProperties: this.#element(field.mapKind, field), ...(keys ? { propertyNames: keys } : {}) };
        break;
      }
    }
    const oneof = field.oneof ? `Member of the oneof \`${field.oneof.name}\`: at most one of its fields is set.` : undefined;
    const description = [commentOf(field), oneof].filter((text) => text !== undefined).join("\n\n");
    return {
      ...withDescription(schema, description === "" ? undefined : description),
      ...(field.deprecated ? { deprecated: true } : {}),
    };
  }

  #element(kind: "scalar" | "enum" | "message", field: DescField & { fieldKind: "list" | "map" }): JsonSchema {
    if (kind === "enum" && field.enum) return this.#enum(field.enum);
    if (kind === "message" && field.message) return this.message(field.message);
    if (field.scalar === undefined) throw new Error(`${field.parent.typeName}.${field.name}: element type not recognised`);
    return scalarSchema(field.scalar);
  }

  #enum(desc: DescEnum): JsonSchema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    this.#define(desc.typeName, () => {
      const values = desc.values.map((value) => {
        const comment = commentOf(value);
        return comment === undefined ? `- \`${value.name}\`` : `- \`${value.name}\`: ${comment.replace(/\n/g, " ")}`;
      });
      const description = [commentOf(desc), values.join("\n")].filter((text) => text !== undefined).join("\n\n");
      return { type: "string", enum: desc.values.map((value) => value.name), description };
    });
    return { $ref: `#/components/schemas/${desc.typeName}` };
  }

  /** Reserves the name before building, so recursive messages end in a reference. */
  #define(name: string, build: () => JsonSchema): void {
    if (this.#schemas.has(name)) return;
    this.#schemas.set(name, {});
    this.#schemas.set(name, build());
  }
}

function pairs<T>(items: readonly T[]): T[][] {
  return items.flatMap((first, index) => items.slice(index + 1).map((second) => [first, second]));
}
