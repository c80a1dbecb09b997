import { type DescEnum, type DescMessage, fromJson } from "@bufbuild/protobuf";
import { StructSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { HttpError } from "./http-body.js";

/**
 * The request fields a REST query string sets, in the proto's JSON form
 * (`pageSize=10` → `{pageSize: "10"}`, which the JSON decoder accepts for
 * numbers). An enum may be named as `enumValue` allows; a time that is not
 * RFC 3339 is a 400 naming its parameter.
 */
export function queryFields(schema: DescMessage, query: URLSearchParams): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of query) {
    const field = schema.fields.find((each) => each.jsonName === key || each.name === key);
    if (field?.fieldKind === "message" && field.message.typeName === TimestampSchema.typeName) checkTimestamp(key, value);
    fields[key] = field?.fieldKind === "enum" ? enumValue(field.enum, key, value) : value;
  }
  return fields;
}

function checkTimestamp(parameter: string, text: string): void {
  try {
    fromJson(TimestampSchema, text);
  } catch {
    throw new HttpError(
      400,
      "invalid_argument",
      `${parameter} must be a time in RFC 3339 form, such as 2026-01-02T15:04:05Z (got ${JSON.stringify(text.slice(0, 64))})`,
    );
  }
}

/**
 * Why a JSON message puts something other than an object where `schema`
 * wants a google.protobuf.Struct (an event's payload), naming the field
 * (`events[2].payload`); undefined when none does. protobuf-es refuses it
 * too, but its message names the type, not the field.
 */
export function structFieldError(schema: DescMessage, json: Record<string, unknown>, path = ""): string | undefined {
  for (const field of schema.fields) {
    if (field.message === undefined) continue;
    const value = json[field.jsonName] ?? json[field.name];
    if (value === undefined || value === null) continue;
    const items = field.fieldKind === "list" && Array.isArray(value) ? value : field.fieldKind === "message" ? [value] : [];
    for (const [index, item] of items.entries()) {
      const at = `${path}${field.jsonName}${field.fieldKind === "list" ? `[${index}]` : ""}`;
      const isObject = typeof item === "object" && item !== null && !Array.isArray(item);
      if (field.message.typeName === StructSchema.typeName) {
        if (!isObject) return `${at} must be a JSON object, not ${Array.isArray(item) ? "an array" : JSON.stringify(item).slice(0, 40)}`;
      } else if (isObject && field.message.typeName.startsWith("webhooks.")) {
        const inner = structFieldError(field.message, item as Record<string, unknown>, `${at}.`);
        if (inner) return inner;
      }
    }
  }
  return undefined;
}

/**
 * A REST JSON body with its top-level enum names spelt as protobuf JSON wants
 * them, so `{"signatureScheme": "STANDARD_WEBHOOKS"}` works as a query
 * parameter would. Numbers and other fields pass as they are.
 */
export function bodyFields(schema: DescMessage, body: Record<string, unknown>): Record<string, unknown> {
  const fields = { ...body };
  for (const [key, value] of Object.entries(body)) {
    const field = schema.fields.find((each) => each.jsonName === key || each.name === key);
    if (field?.fieldKind === "enum" && typeof value === "string") fields[key] = enumValue(field.enum, key, value);
  }
  return fields;
}

/**
 * An enum named in full (`NOTIFICATION_STATUS_FAILED`, as protobuf JSON
 * spells it), by its short name without the enum's shared prefix (`FAILED`),
 * in any case, or by its number; anything else is a 400 listing the names.
 */
function enumValue(type: DescEnum, parameter: string, text: string): string | number {
  const wanted = text.toUpperCase();
  const shortName = (name: string) => (type.sharedPrefix ? name.slice(type.sharedPrefix.length) : name);
  const value = type.values.find((each) => each.name === wanted || shortName(each.name) === wanted);
  if (value) return value.name;
  if (/^\d+$/.test(text) && type.values.some((each) => each.number === Number(text))) return Number(text);
  const names = type.values.map((each) => shortName(each.name)).join(", ");
  throw new HttpError(
    400,
    "invalid_argument",
    `${parameter} must be one of ${names} (or their full names, e.g. ${type.values.at(-1)?.name})`,
  );
}
