import { HttpError } from "./http-body.js";

const MAX_JSON_DEPTH = 32;

/** In a `u` pattern a pair is one code point, so this matches only a surrogate standing alone. */
const LONE_SURROGATE = /\p{Cs}/u;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

function invalid(message: string): HttpError {
  return new HttpError(400, "invalid_argument", message);
}

/**
 * Parses a JSON object body with clear 400s for every way it can be wrong:
 * the one check of every JSON request, REST, Connect and gRPC-Web alike. The
 * text must be I-JSON (RFC 7493): UTF-8, no lone surrogate, no key twice in
 * an object; nor may it use the key `__proto__`, which the protobuf
 * conversion would turn into a prototype (and lose).
 */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength === 0) return {};
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalid("request body is not valid UTF-8");
  }
  assertDepthAndUniqueKeys(text);
  let value: unknown;
  try {
    value = JSON.parse(text, (key, item) => {
      if (key === "__proto__") throw invalid("request body may not use the key __proto__");
      if (LONE_SURROGATE.test(key) || (typeof item === "string" && LONE_SURROGATE.test(item)))
        throw invalid("request body has a lone surrogate (an unpaired \\ud800-\\udfff escape): JSON text must be well-formed Unicode");
      return item;
    });
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw invalid(`request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid("request body must be a JSON object");
  return value as Record<string, unknown>;
}

/**
 * Refuses deep nesting (before parsing, so nothing downstream recurses on it)
 * and a key repeated in one object, which JSON.parse would resolve silently,
 * the last one winning. Text that is no JSON at all is left to JSON.parse.
 */
function assertDepthAndUniqueKeys(text: string): void {
  // One entry per open bracket: an object's keys so far, or undefined for an array.
  const open: Array<Set<string> | undefined> = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      const keys = open.at(-1);
      if (expectingKey && keys) {
        const key = decodeString(text.slice(i, end + 1));
        if (key !== undefined && keys.has(key))
          throw invalid(`request body has the key ${JSON.stringify(key.slice(0, 64))} twice in one object`);
        if (key !== undefined) keys.add(key);
      }
      expectingKey = false;
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      open.push(c === OPEN_OBJECT ? new Set() : undefined);
      if (open.length > MAX_JSON_DEPTH) throw invalid(`request body nests deeper than ${MAX_JSON_DEPTH} levels`);
      expectingKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
      expectingKey = false;
    } else if (c === COMMA) expectingKey = open.at(-1) !== undefined;
  }
}

/** The index of the quote closing the string that opens at `start` (the last index if none does). */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  return text.length - 1;
}

/** A string literal's value; undefined when it is malformed (JSON.parse then says how). */
function decodeString(literal: string): string | undefined {
  if (!literal.includes("\\")) return literal.slice(1, -1);
  try {
    return JSON.parse(literal) as string;
  } catch {
    return undefined;
  }
}
