import { timingSafeEqual } from "node:crypto";
import { generateApiKey, hashApiKey } from "./api-keys.js";
import { type ClientAccess, disabledMessage } from "./client-access.js";
import { NotFoundError, PermissionDeniedError, UnauthenticatedError, ValidationError } from "./errors.js";
import { isWellFormedId, newId } from "./ids.js";
import type { ApiKeyRecord, Client, ClientLimitChanges } from "./model.js";
import type { ClientStore, KeyHolder } from "./ports.js";
import { checkRetention } from "./retention.js";
import { assertPlainText } from "./text.js";

/** A key's "last used" is written at most this often: no write per call. */
export const KEY_USE_RECORDED_EVERY_MS = 60_000;

/** The reason a client is disabled with when the operator gives none. */
export const DEFAULT_DISABLED_REASON = "disabled by an operator";

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

function checkKeyName(name: string): string {
  const trimmed = name.trim();
  assertPlainText(trimmed, "name");
  if (trimmed.length > 200) throw new ValidationError("name is longer than 200 characters", "name");
  return trimmed;
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

/** Clients, their API keys, and their lifecycle (disabled, enabled, deleted). */
export class ClientDirectory {
  /** When this instance last had each key's use recorded (ms since the epoch). */
  readonly #usesRecorded = new Map<string, number>();

  constructor(
    private readonly clients: ClientStore,
    private readonly access: ClientAccess,
    /** Told when recording a key's use fails (the call itself goes on). */
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** The client holding `apiKey`, and which key it is; a disabled client's key is refused with why. */
  async authenticate(apiKey: string | undefined): Promise<KeyHolder> {
    if (!apiKey) throw new UnauthenticatedError("missing API key: send Authorization: Bearer <key>");
    // Looked up by hash: the index probe compares hashes, never the secret itself.
    const holder = await this.clients.findByKeyHash(hashApiKey(apiKey));
    if (!holder) throw new UnauthenticatedError("invalid API key");
    this.#recordUse(holder.keyId);
    const { client } = holder;
    if (client.disabled) throw new PermissionDeniedError(disabledMessage(client.id, client.disabled.reason));
    return holder;
  }

  /**
   * Makes sure a client holding `apiKey` exists (BOOTSTRAP_API_KEY); answers
   * it with the key's id, or undefined when that key was revoked.
   */
  async ensureBootstrapClient(apiKey: string): Promise<KeyHolder | undefined> {
    const keyHash = hashApiKey(apiKey);
    await this.clients.ensureWithKey("bootstrap", keyHash);
    return this.clients.findByKeyHash(keyHash);
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

  async issueKey(clientId: string, name = ""): Promise<IssuedKey> {
    const trimmed = checkKeyName(name);
    await this.#require(clientId);
    const issued = this.#issue(clientId, trimmed);
    await this.clients.addKey(issued.record);
    return issued;
  }

  /** The client's keys, revoked ones too (records hold only hashes). */
  async listKeys(clientId: string): Promise<ApiKeyRecord[]> {
    await this.#require(clientId);
    return this.clients.listKeys(clientId);
  }

  async revokeKey(clientId: string, keyId: string): Promise<void> {
    await this.#require(clientId);
    if (!isWellFormedId("key", keyId) || !(await this.clients.revokeKey(clientId, keyId, new Date())))
      throw new NotFoundError(`API key ${keyId} of client ${clientId} not found`);
    this.access.noteRevoked(keyId);
  }

  /** Disables the client (again, with a new reason): see ClientAccess for what that holds back. */
  async disable(clientId: string, reason: string): Promise<Client> {
    const trimmed = reason.trim() || DEFAULT_DISABLED_REASON;
    assertPlainText(trimmed, "reason");
    if (trimmed.length > 500) throw new ValidationError("reason is longer than 500 characters", "reason");
    await this.#require(clientId);
    const client = await this.clients.setDisabled(clientId, { at: new Date(), reason: trimmed });
    if (!client) throw new NotFoundError(`client ${clientId} not found`);
    this.access.noteDisabled(clientId, trimmed);
    return client;
  }

  async enable(clientId: string): Promise<Client> {
    await this.#require(clientId);
    const client = await this.clients.setDisabled(clientId, null);
    if (!client) throw new NotFoundError(`client ${clientId} not found`);
    this.access.noteEnabled(clientId);
    return client;
  }

  /** Deletes the client: its keys at once, the rest of its data by the purge (retention.ts). */
  async delete(clientId: string): Promise<void> {
    await this.#require(clientId);
    if (!(await this.clients.markDeleted(clientId, new Date()))) throw new NotFoundError(`client ${clientId} not found`);
    this.access.noteDeleted(clientId);
  }

  async #require(clientId: string): Promise<Client> {
    const client = isWellFormedId("cli", clientId) ? await this.clients.get(clientId) : undefined;
    if (!client) throw new NotFoundError(`client ${JSON.stringify(clientId.slice(0, 64))} not found`);
    return client;
  }

  #issue(clientId: string, name = ""): IssuedKey {
    const key = generateApiKey();
    return { key, record: { id: newId("key"), clientId, keyHash: hashApiKey(key), name, createdAt: new Date() } };
  }

  /** Writes the key's use unless this instance did within KEY_USE_RECORDED_EVERY_MS (nor awaits it: the call goes on). */
  #recordUse(keyId: string): void {
    const now = Date.now();
    if (now - (this.#usesRecorded.get(keyId) ?? 0) < KEY_USE_RECORDED_EVERY_MS) return;
    this.#usesRecorded.set(keyId, now);
    this.clients.markKeyUsed(keyId, new Date(now), KEY_USE_RECORDED_EVERY_MS).catch(this.onError);
  }
}
