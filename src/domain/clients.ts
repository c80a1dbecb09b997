import { timingSafeEqual } from "node:crypto";
import { generateApiKey, hashApiKey } from "./api-keys.js";
import { NotFoundError, UnauthenticatedError, ValidationError } from "./errors.js";
import { isWellFormedId, newId } from "./ids.js";
import type { ApiKeyRecord, Client, ClientLimitChanges } from "./model.js";
import type { ClientStore } from "./ports.js";
import { checkRetention } from "./retention.js";
import { assertPlainText } from "./text.js";

/** The most subscriptions a client's own quota may allow. */
export const MAX_SUBSCRIPTION_QUOTA = 1_000_000;

/**
 * A client's own limits as the API gives them: 0 means "the service's",
 * undefined (in an update) "as it is".
 */
export interface ClientLimitsInput {
  retentionMs?: number;
  maxSubscriptions?: number;
}

/** The limits checked, with 0 turned into null (the service's). */
function limitChanges(input: ClientLimitsInput): ClientLimitChanges {
  const changes: ClientLimitChanges = {};
  if (input.retentionMs !== undefined) {
    changes.retentionMs = input.retentionMs === 0 ? null : checkRetention(input.retentionMs, "retention");
  }
  const quota = input.maxSubscriptions;
  if (quota !== undefined) {
    if (!Number.isInteger(quota) || quota < 0 || quota > MAX_SUBSCRIPTION_QUOTA) {
      throw new ValidationError(`max_subscriptions must be from 1 to ${MAX_SUBSCRIPTION_QUOTA} (0: the service's)`, "max_subscriptions");
    }
    changes.maxSubscriptions = quota === 0 ? null : quota;
  }
  return changes;
}

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

  async create(name: string, limits: ClientLimitsInput = {}): Promise<{ client: Client; issued: IssuedKey }> {
    const trimmed = name.trim();
    assertPlainText(trimmed, "name");
    if (trimmed === "" || trimmed.length > 200) throw new ValidationError("name is required (1 to 200 characters)", "name");
    const { retentionMs, maxSubscriptions } = limitChanges(limits);
    const client: Client = {
      id: newId("cli"),
      name: trimmed,
      createdAt: new Date(),
      ...(retentionMs == null ? {} : { retentionMs }),
      ...(maxSubscriptions == null ? {} : { maxSubscriptions }),
    };
    const issued = this.#issue(client.id);
    await this.clients.create(client, issued.record);
    return { client, issued };
  }

  list(): Promise<Client[]> {
    return this.clients.list();
  }

  /** Sets or clears the client's own retention and quota. */
  async setLimits(clientId: string, limits: ClientLimitsInput): Promise<Client> {
    const changes = limitChanges(limits);
    await this.#require(clientId);
    const client = await this.clients.setLimits(clientId, changes);
    if (!client) throw new NotFoundError(`client ${clientId} not found`);
    return client;
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
