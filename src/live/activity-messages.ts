import type { DeliveryActivity } from "../domain/delivery-activity.js";

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more. */
export const MAX_MESSAGE_BYTES = 7_900;

/**
 * Activities as messages between instances: `{"s": source, "a": [...]}`,
 * each message under `maxBytes` (an activity too big on its own is dropped:
 * errors are cut short, so none is).
 */
export function encodeActivities(source: string, activities: readonly DeliveryActivity[], maxBytes = MAX_MESSAGE_BYTES): string[] {
  const head = `{"s":${JSON.stringify(source)},"a":[`;
  const messages: string[] = [];
  let parts: string[] = [];
  let size = Buffer.byteLength(head) + 2;
  for (const activity of activities) {
    const part = JSON.stringify(activity);
    const bytes = Buffer.byteLength(part) + 1;
    if (size + bytes > maxBytes && parts.length > 0) {
      messages.push(`${head}${parts.join(",")}]}`);
      parts = [];
      size = Buffer.byteLength(head) + 2;
    }
    if (size + bytes > maxBytes) continue;
    parts.push(part);
    size += bytes;
  }
  if (parts.length > 0) messages.push(`${head}${parts.join(",")}]}`);
  return messages;
}

/** The source and activities of a message; undefined for one that is not ours. */
export function decodeActivities(message: string): { source: string; activities: DeliveryActivity[] } | undefined {
  try {
    const parsed = JSON.parse(message) as { s?: unknown; a?: unknown };
    if (typeof parsed.s !== "string" || !Array.isArray(parsed.a)) return undefined;
    const activities = (parsed.a as Array<DeliveryActivity & { at: string; nextAttemptAt?: string }>).map(
      ({ nextAttemptAt, ...activity }): DeliveryActivity => ({
        ...activity,
        at: new Date(activity.at),
        ...(nextAttemptAt ? { nextAttemptAt: new Date(nextAttemptAt) } : {}),
      }),
    );
    return { source: parsed.s, activities };
  } catch {
    return undefined;
  }
}
