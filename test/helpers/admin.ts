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
