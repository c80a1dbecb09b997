import { hashApiKey } from "./api-keys.js";
import { UnauthenticatedError } from "./errors.js";
import type { Client } from "./model.js";
import type { ClientStore } from "./ports.js";

/** Resolves an API key to its client, or refuses. */
export class ClientDirectory {
  constructor(private readonly clients: ClientStore) {}

  async authenticate(apiKey: string | undefined): Promise<Client> {
    if (!apiKey) throw new UnauthenticatedError("missing API key: send Authorization: Bearer <key>");
    const client = await this.clients.findByKeyHash(hashApiKey(apiKey));
    if (!client) throw new UnauthenticatedError("invalid API key");
    return client;
  }

  /** Makes sure a client holding `apiKey` exists (BOOTSTRAP_API_KEY). */
  async ensureBootstrapClient(apiKey: string): Promise<Client> {
    return this.clients.ensureWithKey("bootstrap", hashApiKey(apiKey));
  }
}
