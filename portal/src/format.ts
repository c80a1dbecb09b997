import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";

export function formatTime(timestamp: Timestamp | undefined): string {
  return timestamp ? timestampDate(timestamp).toLocaleString() : "—";
}

/** A JSON text indented for reading; left as it is when it does not parse. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function prettyValue(value: unknown): string {
  return JSON.stringify(value ?? {}, null, 2);
}
