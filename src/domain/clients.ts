import { timingSafeEqual } from "node:crypto";
import { generateApiKey, hashApiKey } from "./api-keys.js";
import { NotFoundError, UnauthenticatedError, ValidationError } from "./errors.js";
import { isWellFormedId, newId } from "./ids.js";
import type { ApiKeyRecord, Client } from "./model.js";
import type { ClientStore } from "./ports.js";
import { assertPlainText } from "./text.js";

export interface IssuedKey {
  record: ApiKeyRecord;
  /** The secret: returned once, stored only as its hash. */
  key: string;
}

/**
 * Whether a presented secret is `expected`, compared in time independent of
 * where they differ (their hashes, with timingSafeEqual), with `expected`
 * hashed once: a token checked on every call (admin, metrics) is not hashed
 * again each time.
 */
export function secretMatcher(expected: string): (presented: string) => boolean {
  const digest = Buffer.from(hashApiKey(expected), "hex");
  return (presented) => timingSafeEqual(Buffer.from(hashApiKey(presented), "hex"), digest);
}

/** Clients and their API keys. */
export class ClientDirectory {
  constructor(private readonly clients: ClientStore) {}

  async authenticate(apiKey: string | undefined): Promise<Client> {
    if (!apiKey) throw new UnauthenticatedError("missing API key: send Authorization: Bearer <key>");
    // Looked up by hash: the index probe compares hashes, never the secret itself.
    const client = await this.clients.findByKeyHash(hashApiKey(apiKey));
    if (!client) throw new UnauthenticatedError("invalid API key");
    return client;
  }

  /** Makes sure a client holding `apiKey` exists (BOOTSTRAP_API_KEY). */
  async ensureBootstrapClient(apiKey: string): Promise<Client> {
    return this.clients.ensureWithKey("bootstrap", hashApiKey(apiKey));
  }

  async create(name: string): Promise<{ client: Client; issued: IssuedKey }> {
    const trimmed = name.trim();
    assertPlainText(trimmed, "name");
    if (trimmed === "" || trimmed.length > 200) throw new ValidationError("name is required (1 to 200 characters)", "name");
    const client: Client = { id: newId("cli"), name: trimmed, createdAt: new Date() };
    const issued = this.#issue(client.id);
    await this.clients.create(client, issued.record);
    return { client, issued };
  }

  list(): Promise<Client[]> {
    return this.clients.list();
  }

  async issueKey(clientId: string): Promise<IssuedKey> {
    await this.#require(clientId);
    const issued = this.#issue(clientId);
    await this.clients.addKey(issued.record);
    return issued;
  }

  async revokeKey(clientId: string, keyId: string): Promise<void> {
    await this.#require(clientId);
    if (!isWellFormedId("key", keyId) || !(await this.clients.revokeKey(clientId, keyId, new Date())))
      throw new NotFoundError(`API key ${keyId} of client ${clientId} not found`);
  }

  async #require(clientId: string): Promise<Client> {
    const client = isWellFormedId("cli", clientId) ? await this.clients.get(clientId) : undefined;
    if (!client) throw new NotFoundError(`client ${JSON.stringify(clientId.slice(0, 64))} not found`);
    return client;
  }

  #issue(clientId: string): IssuedKey {
    const key = generateApiKey();
    return { key, record: { id: newId("key"), clientId, keyHash: hashApiKey(key), createdAt: new Date() } };
  }
}
