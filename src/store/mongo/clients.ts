import type { Collection } from "mongodb";
import { newId } from "../../domain/ids.js";
import type { ApiKeyRecord, Client, ClientLimitChanges } from "../../domain/model.js";
import type { BarredClient, ClientStore, DeletedClientPurge, KeyHolder } from "../../domain/ports.js";
import { type ApiKeyDoc, CLIENTS, type ClientDoc, type Collections, checkLimit, isDuplicateKey, isString, optional } from "./documents.js";

const toClient = (doc: ClientDoc): Client => ({
  id: doc._id,
  name: doc.name,
  createdAt: doc.createdAt,
  ...optional("retentionMs", doc.retentionMs),
  ...optional("maxSubscriptions", doc.maxSubscriptions),
  ...optional("disabled", doc.disabled),
});

const toApiKey = (doc: ApiKeyDoc): ApiKeyRecord => ({
  id: doc._id,
  clientId: doc.clientId,
  keyHash: doc.keyHash,
  name: doc.name ?? "",
  createdAt: doc.createdAt,
  ...optional("lastUsedAt", doc.lastUsedAt),
  ...optional("revokedAt", doc.revokedAt),
});

/** `deletedAt: null` matches a missing field too: a client not deleted. */
const NOT_DELETED = { deletedAt: null } as const;

export class MongoClientStore implements ClientStore {
  private readonly clients: Collection<ClientDoc>;
  private readonly keys: Collection<ApiKeyDoc>;

  constructor(private readonly c: Collections) {
    this.clients = c.clients;
    this.keys = c.apiKeys;
  }

  async ensureWithKey(name: string, keyHash: string): Promise<Client> {
    if (!isString(keyHash)) throw new TypeError("keyHash must be a string");
    const existing = await this.findByKeyHash(keyHash);
    if (existing) return existing.client;
    const client: Client = { id: newId("cli"), name, createdAt: new Date() };
    try {
      await this.#insertWithKey(client, { _id: newId("key"), keyHash, clientId: client.id, name, createdAt: client.createdAt });
      return client;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    // Another instance bootstrapped the same key first (the unique keyHash index refused ours); its client wins.
    const winner = await this.findByKeyHash(keyHash);
    if (!winner) throw new Error("client key vanished while bootstrapping");
    return winner.client;
  }

  async findByKeyHash(keyHash: string): Promise<KeyHolder | undefined> {
    if (!isString(keyHash)) return undefined;
    // One round trip, like the SQL join: this runs on every authenticated request.
    // `revokedAt: null` matches a missing field too: only unrevoked keys authenticate.
    const [doc] = await this.keys
      .aggregate<{ _id: string; client: ClientDoc }>([
        { $match: { keyHash, revokedAt: null } },
        { $lookup: { from: CLIENTS, localField: "clientId", foreignField: "_id", as: "client" } },
        { $unwind: "$client" },
        { $match: { "client.deletedAt": null } },
        { $project: { _id: 1, client: 1 } },
      ])
      .toArray();
    return doc && { client: toClient(doc.client), keyId: doc._id };
  }

  async create(client: Client, key: ApiKeyRecord): Promise<void> {
    if (!isString(key.keyHash)) throw new TypeError("keyHash must be a string");
    // Like the SQL statement, the key belongs to the new client whatever `key.clientId` says, and starts unrevoked.
    await this.#insertWithKey(client, {
      _id: key.id,
      keyHash: key.keyHash,
      clientId: client.id,
      name: key.name,
      createdAt: key.createdAt,
    });
  }

  async get(id: string): Promise<Client | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.clients.findOne({ _id: id, ...NOT_DELETED });
    return doc ? toClient(doc) : undefined;
  }

  async setLimits(id: string, changes: ClientLimitChanges): Promise<Client | undefined> {
    if (!isString(id)) return undefined;
    // null clears a limit (the field goes, as SQL writes NULL); undefined leaves it.
    const set: Partial<ClientDoc> = {};
    const unset: Record<string, ""> = {};
    for (const field of ["retentionMs", "maxSubscriptions"] as const) {
      const value = changes[field];
      if (value === null) unset[field] = "";
      else if (value !== undefined) set[field] = value;
    }
    // The driver refuses an update with no operator, and servers before 5.0 an empty operator document.
    if (Object.keys(set).length + Object.keys(unset).length === 0) return this.get(id);
    const doc = await this.clients.findOneAndUpdate(
      { _id: id, ...NOT_DELETED },
      { ...(Object.keys(set).length > 0 ? { $set: set } : {}), ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) },
      { returnDocument: "after" },
    );
    return doc ? toClient(doc) : undefined;
  }

  async list(): Promise<Client[]> {
    const docs = await this.clients.find(NOT_DELETED).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(toClient);
  }

  async addKey(key: ApiKeyRecord): Promise<void> {
    if (!isString(key.keyHash)) throw new TypeError("keyHash must be a string");
    // Stands in for the SQL foreign key on client_id.
    const owner = isString(key.clientId) ? await this.clients.findOne({ _id: key.clientId }, { projection: { _id: 1 } }) : null;
    if (!owner) throw new Error(`api key ${key.id}: client ${String(key.clientId)} does not exist`);
    // As in SQL, a new key starts unrevoked.
    await this.keys.insertOne({ _id: key.id, keyHash: key.keyHash, clientId: key.clientId, name: key.name, createdAt: key.createdAt });
  }

  async revokeKey(clientId: string, keyId: string, at: Date): Promise<boolean> {
    if (!isString(clientId) || !isString(keyId)) return false;
    // An update pipeline is SQL's COALESCE: a second revocation keeps the first time and still matches.
    // `$literal` keeps the value from being read as an expression.
    const { matchedCount } = await this.keys.updateOne({ _id: keyId, clientId }, [
      { $set: { revokedAt: { $ifNull: ["$revokedAt", { $literal: at }] } } },
    ]);
    return matchedCount === 1;
  }

  async listKeys(clientId: string): Promise<ApiKeyRecord[]> {
    if (!isString(clientId)) return [];
    const docs = await this.keys.find({ clientId }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(toApiKey);
  }

  async markKeyUsed(keyId: string, at: Date, withinMs: number): Promise<void> {
    if (!isString(keyId)) return;
    const before = new Date(at.getTime() - withinMs);
    await this.keys.updateOne(
      { _id: keyId, $or: [{ lastUsedAt: { $exists: false } }, { lastUsedAt: { $lt: before } }] },
      { $set: { lastUsedAt: at } },
    );
  }

  async setDisabled(id: string, disabled: { at: Date; reason: string } | null): Promise<Client | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.clients.findOneAndUpdate(
      { _id: id, ...NOT_DELETED },
      disabled ? { $set: { disabled: { at: disabled.at, reason: disabled.reason } } } : { $unset: { disabled: "" } },
      { returnDocument: "after" },
    );
    return doc ? toClient(doc) : undefined;
  }

  async markDeleted(id: string, at: Date): Promise<boolean> {
    if (!isString(id)) return false;
    const { modifiedCount } = await this.clients.updateOne({ _id: id, ...NOT_DELETED }, { $set: { deletedAt: at } });
    if (modifiedCount !== 1) return false;
    // No transaction: a crash before this leaves keys that authenticate as no one (findByKeyHash skips
    // deleted clients); the purge deletes them with the rest.
    await this.keys.deleteMany({ clientId: id });
    return true;
  }

  async purgeDeleted(limit: number): Promise<DeletedClientPurge> {
    checkLimit(limit);
    const none = { notifications: 0, attempts: 0, others: 0 };
    const [client] = await this.clients
      .find({ deletedAt: { $ne: null } })
      .sort({ deletedAt: 1, _id: 1 })
      .limit(1)
      .toArray();
    if (!client || limit === 0) return none;
    const clientId = client._id;
    // A notification whose job is locked right now waits for a later batch (see the SQL adapter).
    const purgeable = { clientId, "job.lockedAt": null };
    const doomed = await this.c.notifications
      .find(purgeable)
      .sort({ createdAt: 1, _id: 1 })
      .limit(limit)
      .project<{ _id: string }>({ _id: 1 })
      .toArray();
    if (doomed.length > 0) {
      const ids = doomed.map((doc) => doc._id);
      const attempts = await this.c.attempts.deleteMany({ notificationId: { $in: ids } });
      const notifications = await this.c.notifications.deleteMany({ _id: { $in: ids }, ...purgeable });
      return { notifications: notifications.deletedCount, attempts: attempts.deletedCount, others: 0 };
    }
    const subscriptions = await this.c.subscriptions.find({ clientId }).limit(limit).project<{ _id: string }>({ _id: 1 }).toArray();
    const keys = await this.c.idempotencyKeys
      .find({ "_id.clientId": clientId })
      .limit(limit)
      .project<{ _id: { clientId: string; key: string } }>({ _id: 1 })
      .toArray();
    let others = 0;
    if (subscriptions.length > 0) {
      const ids = subscriptions.map((doc) => doc._id);
      // Their throttle slots first (the SQL foreign key cascades): a crash in between finds the subscriptions again.
      await this.c.throttleSlots.deleteMany({ _id: { $in: ids } });
      others += (await this.c.subscriptions.deleteMany({ _id: { $in: ids } })).deletedCount;
    }
    if (keys.length > 0) others += (await this.c.idempotencyKeys.deleteMany({ _id: { $in: keys.map((doc) => doc._id) } })).deletedCount;
    others += (await this.keys.deleteMany({ clientId })).deletedCount;
    if (others > 0) return { ...none, others };
    if (await this.c.notifications.findOne({ clientId }, { projection: { _id: 1 } })) return none;
    const { deletedCount } = await this.clients.deleteOne({ _id: clientId, deletedAt: { $ne: null } });
    return { ...none, others: deletedCount };
  }

  async listBarred(): Promise<BarredClient[]> {
    const docs = await this.clients
      .find({ $or: [{ disabled: { $exists: true } }, { deletedAt: { $ne: null } }] })
      .project<Pick<ClientDoc, "_id" | "disabled" | "deletedAt">>({ disabled: 1, deletedAt: 1 })
      .toArray();
    return docs.map((doc) => ({ id: doc._id, ...(doc.deletedAt || !doc.disabled ? {} : { disabledReason: doc.disabled.reason }) }));
  }

  async validKeys(keyIds: readonly string[]): Promise<string[]> {
    const ids = keyIds.filter(isString);
    if (ids.length === 0) return [];
    const keys = await this.keys
      .find({ _id: { $in: ids }, revokedAt: null })
      .project<{ _id: string; clientId: string }>({ clientId: 1 })
      .toArray();
    const live = await this.clients
      .find({ _id: { $in: [...new Set(keys.map((key) => key.clientId))] }, ...NOT_DELETED })
      .project<{ _id: string }>({ _id: 1 })
      .toArray();
    const clientIds = new Set(live.map((doc) => doc._id));
    return keys.filter((key) => clientIds.has(key.clientId)).map((key) => key._id);
  }

  /** The client and its first key, all or nothing as far as a transaction-less write can be. */
  async #insertWithKey(client: Client, key: ApiKeyDoc): Promise<void> {
    await this.clients.insertOne({
      _id: client.id,
      name: client.name,
      createdAt: client.createdAt,
      ...optional("retentionMs", client.retentionMs),
      ...optional("maxSubscriptions", client.maxSubscriptions),
    });
    try {
      await this.keys.insertOne(key);
    } catch (error) {
      // No transaction: undo the client by hand, as the failed SQL statement in `create` rolls back.
      // (After losing the `ensureWithKey` race the SQL adapter keeps its keyless client; this one removes it.)
      // Best effort: a leftover client holds no key, so nothing can authenticate as it.
      await this.clients.deleteOne({ _id: client.id }).catch(() => {});
      throw error;
    }
  }
}
