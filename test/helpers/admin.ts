import { ADMIN_TOKEN, rest } from "./service.js";

export const adminAuth = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** A new client through the internal REST API; returns its id and first API key. */
export async function createClient(baseUrl: string, name: string): Promise<{ id: string; key: string; auth: Record<string, string> }> {
  const created = await rest(baseUrl, "POST", "/api/internal/clients", { name }, adminAuth);
  if (created.status !== 200) throw new Error(`create client: ${created.status} ${created.text}`);
  const client = created.json.client as { id: string };
  const apiKey = created.json.apiKey as { key: string };
  return { id: client.id, key: apiKey.key, auth: { authorization: `Bearer ${apiKey.key}` } };
}

/** Registers the event type `name` through the internal REST API; `fields` adds to (or replaces) its description. */
export async function registerEventType(baseUrl: string, name: string, fields: Record<string, unknown> = {}): Promise<void> {
  const registered = await rest(baseUrl, "POST", "/api/internal/eventTypes", { name, description: "a test event", ...fields }, adminAuth);
  if (registered.status !== 200) throw new Error(`register event type ${name}: ${registered.status} ${registered.text}`);
}

/** Publishes `payload` as `event` for the client `clientId` through the internal REST API; returns the jobs it made. */
export async function publishEvent(baseUrl: string, clientId: string, event: string, payload: unknown): Promise<string[]> {
  const published = await rest(baseUrl, "POST", "/api/internal/events/publish", { clientId, event, payload }, adminAuth);
  if (published.status !== 200) throw new Error(published.text);
  return (published.json.jobIds as string[] | undefined) ?? [];
}
