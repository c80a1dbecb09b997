import { ValidationError } from "./errors.js";
import type { KeySealer } from "./key-sealing.js";
import type { JsonObject, Subscription } from "./model.js";

/**
 * A subscription's own headers, sent with every delivery (an API key the
 * receiver's gateway wants, a routing tag). They often hold secrets, so they
 * are stored sealed like signing keys, as one JSON document bound to the
 * subscription's id, and shown to nobody after creation but as `MASK`.
 */
export type CustomHeaders = Record<string, string>;

export const MAX_HEADERS = 20;
export const MAX_HEADER_NAME_LENGTH = 100;
export const MAX_HEADER_VALUE_LENGTH = 1024;
/** What the API shows for every value after creation: nothing of the value, not even its length. */
export const MASK = "••••";

/** RFC 9110 `token`. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Visible ASCII, space and tab: what every HTTP client sends and every receiver reads alike. */
const FIELD_VALUE = /^[\t\x20-\x7e]*$/;

/** Headers the service sets (the body, signing, tracing) or that belong to the connection: lower case. */
const RESERVED = new Set([
  "host",
  "content-length",
  "content-type",
  "content-encoding",
  "x-signature",
  "x-jobid",
  "x-jobattempt",
  "traceparent",
  "tracestate",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
const RESERVED_PREFIXES = ["webhook-", "proxy-"];

function reservedName(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/**
 * The headers as given, checked: names are HTTP tokens the service does not
 * set itself, each once whatever its case; values are printable ASCII.
 * `input` comes from JSON (a Struct on update), so a value may be no string.
 */
export function checkHeaders(input: JsonObject | CustomHeaders): CustomHeaders {
  const entries = Object.entries(input);
  if (entries.length > MAX_HEADERS) {
    throw new ValidationError(`headers: at most ${MAX_HEADERS} headers, not ${entries.length}`, "headers");
  }
  const seen = new Set<string>();
  const checked: CustomHeaders = {};
  for (const [name, value] of entries) {
    const shown = JSON.stringify(name.slice(0, MAX_HEADER_NAME_LENGTH));
    const fail = (problem: string) => {
      throw new ValidationError(`headers.${shown}: ${problem}`, "headers");
    };
    if (name.length > MAX_HEADER_NAME_LENGTH) fail(`a header name is at most ${MAX_HEADER_NAME_LENGTH} characters`);
    if (!TOKEN.test(name)) fail("not a header name: use letters, digits and !#$%&'*+-.^_`|~ only");
    if (reservedName(name)) fail("the service sets this header itself; choose another name");
    if (seen.has(name.toLowerCase())) fail("given twice (header names are case-insensitive)");
    seen.add(name.toLowerCase());
    if (typeof value !== "string") fail("the value must be a string");
    const text = value as string;
    if (text.length > MAX_HEADER_VALUE_LENGTH) fail(`the value is longer than ${MAX_HEADER_VALUE_LENGTH} characters`);
    if (!FIELD_VALUE.test(text)) fail("the value may hold printable ASCII characters only (no line breaks or other control characters)");
    checked[name] = text;
  }
  return checked;
}

/** The sealed form stored on the subscription; undefined for none. */
export function sealHeaders(sealer: KeySealer, headers: CustomHeaders, subscriptionId: string): string | undefined {
  return Object.keys(headers).length === 0 ? undefined : sealer.seal(JSON.stringify(headers), subscriptionId);
}

/** The subscription's headers in the clear; throws when they do not open (another master key). */
export function openHeaders(sealer: KeySealer, subscription: Pick<Subscription, "id" | "sealedHeaders">): CustomHeaders {
  if (!subscription.sealedHeaders) return {};
  return JSON.parse(sealer.open(subscription.sealedHeaders, subscription.id)) as CustomHeaders;
}

/** Each header's name with `MASK` for its value. */
export function maskHeaders(headers: CustomHeaders): CustomHeaders {
  return Object.fromEntries(Object.keys(headers).map((name) => [name, MASK]));
}
