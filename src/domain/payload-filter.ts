import { ValidationError } from "./errors.js";
import type { JsonObject, JsonValue } from "./model.js";

/**
 * A subscription's payload filter: which notifications it wants. A filter is
 * a JSON object whose every entry must hold (an empty one matches all):
 *
 * - `"Field": value` — the payload's field equals the value (deep equality);
 * - `"Field": {"$op": …}` — the field passes every operator: `$in` / `$nin`
 *   (equal to one / none of a list; a missing field is in none), `$gt`,
 *   `$gte`, `$lt`, `$lte` (a number against a number, a string against a
 *   string, else no match), `$exists` (true / false);
 * - `"Field": {…fields…}` — the field is an object matching that filter;
 * - `"$or": [filter, …]` / `"$and": [filter, …]` — any / every filter matches.
 *
 * A field name with dots is a path into nested objects (`"Customer.Country"`).
 * Filters are checked when saved (`checkFilter`), so matching never meets an
 * unknown operator.
 */

export const MAX_FILTER_BYTES = 4096;
export const MAX_FILTER_DEPTH = 8;

type FieldOperator = "$in" | "$nin" | "$gt" | "$gte" | "$lt" | "$lte" | "$exists";
const FIELD_OPERATORS = new Set<string>(["$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"]);
const LOGICAL_OPERATORS = new Set<string>(["$or", "$and"]);

const isObject = (value: JsonValue | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** An object of operators (every key a field operator) rather than a nested filter. */
const isOperatorObject = (value: JsonObject): boolean => Object.keys(value).some((key) => FIELD_OPERATORS.has(key));

function depthOf(value: JsonValue): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (isObject(value)) return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

/** The filter as given, checked; throws naming where a problem is, e.g. `filter.TotalAmount: unknown operator $foo`. */
export function checkFilter(filter: JsonObject): JsonObject {
  const bytes = Buffer.byteLength(JSON.stringify(filter));
  if (bytes > MAX_FILTER_BYTES) throw new ValidationError(`filter: at most ${MAX_FILTER_BYTES} bytes of JSON, not ${bytes}`, "filter");
  if (depthOf(filter) > MAX_FILTER_DEPTH) throw new ValidationError(`filter: nested more than ${MAX_FILTER_DEPTH} deep`, "filter");
  checkObject(filter, "filter");
  return filter;
}

function fail(where: string, problem: string): never {
  throw new ValidationError(`${where}: ${problem}`, "filter");
}

function checkObject(filter: JsonObject, where: string): void {
  for (const [key, condition] of Object.entries(filter)) {
    const at = `${where}.${key}`;
    if (LOGICAL_OPERATORS.has(key)) {
      if (!Array.isArray(condition) || condition.length === 0) fail(at, "a non-empty list of filters");
      condition.forEach((part, i) => {
        if (!isObject(part)) fail(`${at}[${i}]`, "a filter object");
        checkObject(part, `${at}[${i}]`);
      });
    } else if (key.startsWith("$")) {
      fail(where, FIELD_OPERATORS.has(key) ? `${key} applies to a field, e.g. {"Field": {"${key}": …}}` : `unknown operator ${key}`);
    } else if (key === "" || key.split(".").includes("")) {
      fail(at, "an empty field name");
    } else if (isObject(condition)) {
      if (isOperatorObject(condition)) checkOperators(condition, at);
      else checkObject(condition, at);
    }
  }
}

function checkOperators(operators: JsonObject, where: string): void {
  for (const [operator, operand] of Object.entries(operators)) {
    const at = `${where}.${operator}`;
    if (LOGICAL_OPERATORS.has(operator)) fail(where, `${operator} combines filters and cannot stand among field operators`);
    if (!FIELD_OPERATORS.has(operator)) {
      fail(where, operator.startsWith("$") ? `unknown operator ${operator}` : `mixes operators with the field ${operator}`);
    }
    switch (operator as FieldOperator) {
      case "$in":
      case "$nin":
        if (!Array.isArray(operand)) fail(at, "a list of values");
        break;
      case "$exists":
        if (typeof operand !== "boolean") fail(at, "true or false");
        break;
      default:
        if (typeof operand !== "number" && typeof operand !== "string") fail(at, "a number or a string");
    }
  }
}

/** Whether the payload matches a filter that `checkFilter` accepted. */
export function matchesFilter(filter: JsonObject, payload: JsonObject): boolean {
  return Object.entries(filter).every(([key, condition]) => {
    if (key === "$or") return (condition as JsonObject[]).some((part) => matchesFilter(part, payload));
    if (key === "$and") return (condition as JsonObject[]).every((part) => matchesFilter(part, payload));
    return matchesCondition(condition, fieldAt(payload, key));
  });
}

function fieldAt(payload: JsonObject, path: string): JsonValue | undefined {
  let value: JsonValue | undefined = payload;
  for (const name of path.split(".")) {
    if (!isObject(value) || !Object.hasOwn(value, name)) return undefined;
    value = value[name];
  }
  return value;
}

function matchesCondition(condition: JsonValue, value: JsonValue | undefined): boolean {
  if (!isObject(condition)) return value !== undefined && equal(condition, value);
  if (!isOperatorObject(condition)) return isObject(value) && matchesFilter(condition, value);
  return Object.entries(condition).every(([operator, operand]) => passes(operator as FieldOperator, operand, value));
}

function passes(operator: FieldOperator, operand: JsonValue, value: JsonValue | undefined): boolean {
  switch (operator) {
    case "$exists":
      return (value !== undefined) === operand;
    case "$in":
      return value !== undefined && (operand as JsonValue[]).some((candidate) => equal(candidate, value));
    case "$nin":
      return value === undefined || !(operand as JsonValue[]).some((candidate) => equal(candidate, value));
    default: {
      if (typeof value !== typeof operand || (typeof value !== "number" && typeof value !== "string")) return false;
      const [a, b] = [value as number | string, operand as number | string];
      if (operator === "$gt") return a > b;
      if (operator === "$gte") return a >= b;
      if (operator === "$lt") return a < b;
      return a <= b;
    }
  }
}

function equal(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => equal(item, b[i] as JsonValue));
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && equal(a[key] as JsonValue, b[key] as JsonValue))
    );
  }
  return false;
}
