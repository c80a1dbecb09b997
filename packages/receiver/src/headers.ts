import { MalformedHeaderError, MissingHeaderError } from "./errors.js";

/**
 * Request headers as the frameworks hand them over: Node's `IncomingHttpHeaders`
 * (lower-case names), any plain record (names in any case), or a fetch `Headers`.
 */
export type HeadersInput = Headers | Readonly<Record<string, string | readonly string[] | number | undefined>>;

/** Reads one header by its name in any case; an absent or empty header is undefined. */
export type HeaderLookup = (name: string) => string | undefined;

export function headerLookup(headers: HeadersInput): HeaderLookup {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    const fetchHeaders = headers as Headers;
    return (name) => fetchHeaders.get(name) || undefined;
  }
  const record = headers as Readonly<Record<string, string | readonly string[] | number | undefined>>;
  return (name) => {
    const lower = name.toLowerCase();
    let value = record[lower];
    if (value === undefined) {
      const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === lower);
      value = key === undefined ? undefined : record[key];
    }
    if (Array.isArray(value)) {
      if (value.length > 1) throw new MalformedHeaderError(name, "is sent more than once");
      value = value[0];
    }
    if (value === undefined || value === "") return undefined;
    return String(value);
  };
}

/** The header's value, or a MissingHeaderError naming it. */
export function requireHeader(lookup: HeaderLookup, name: string): string {
  const value = lookup(name);
  if (value === undefined) throw new MissingHeaderError(name);
  return value;
}
