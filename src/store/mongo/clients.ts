import type { Collection } from "mongodb";
import { newId } from "../../domain/ids.js";
import type { ApiKeyRecord, Client, ClientLimitChanges } from "../../domain/model.js";
import type { ClientStore } from "../../domain/ports.js";
import { type ApiKeyDoc, CLIENTS, type ClientDoc, isDuplicateKey, isString, optional } from "./documents.js";

const toClient = (doc: ClientDoc): Client => ({
  id: doc._id,
  name: doc.name,
  createdAt: doc.createdAt,
  ...optional("retentionMs", doc.retentionMs),
  ...optional("maxSubscriptions", doc.maxSubscriptions),
});

export class MongoClientStore implements ClientStore {
  constructor(
    private readonly clients: Collection<ClientDoc>,
    private readonly keys: Collection<ApiKeyDoc>,
  ) {}

  async ensureWithKey(name: string, keyHash: string): Promise<Client> {
    if (!isString(keyHash)) throw new TypeError("keyHash must be a string");
    const existing = await this.findByKeyHash(keyHash);
    if (existing) return existing;
    const client: Client = { id: newId("cli"), name, createdAt: new Date() };
    try {
      await this.#insertWithKey(client, { _id: newId("key"), keyHash, clientId: client.id, createdAt: client.createdAt });
      return client;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    // Another instance bootstrapped the same key first (the unique keyHash index refused ours); its client wins.
    const winner = await this.findByKeyHash(keyHash);
    if (!winner) throw new Error("client key vanished while bootstrapping");
    return winner;
  }

  async findByKeyHash(keyHash: string): Promise<Client | undefined> {
    if (!isString(keyHash)) return undefined;
    // One round trip, like the SQL join: this runs on every authenticated request.
    // `revokedAt: null` matches a missing field too: only unrevoked keys authenticate.
    const [doc] = await this.keys
      .aggregate<ClientDoc>([
        { $match: { keyHash, revokedAt: null } },
        { $lookup: { from: CLIENTS, localField: "clientId", foreignField: "_id", as: "client" } },
        { $unwind: "$client" },
        { $replaceWith: "$client" },
      ])
      .toArray();
    return doc && toClient(doc);
  }

  async create(client: Client, key: ApiKeyRecord): Promise<void> {
    if (!isString(key.keyHash)) throw new TypeError("keyHash must be a string");
    // Like the SQL statement, the key belongs to the new client whatever `key.clientId` says, and starts unrevoked.
    await this.#insertWithKey(client, { _id: key.id, keyHash: key.keyHash, clientId: client.id, createdAt: key.createdAt });
  }

  async get(id: string): Promise<Client | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.clients.findOne({ _id: id });
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
      { _id: id },
      { ...(Object.keys(set).length > 0 ? { $set: set } : {}), ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) },
      { returnDocument: "after" },
    );
    return doc ? toClient(doc) : undefined;
  }

  async list(): Promise<Client[]> {
    const docs = await this.clients.find({}).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(toClient);
  }

  async addKey(key: ApiKeyRecord): Promise<void> {
    if (!isString(key.keyHash)) throw new TypeError("keyHash must be a string");
    // Stands in for the SQL foreign key on client_id.
    const owner = isString(key.clientId) ? await this.clients.findOne({ _id: key.clientId }, { projection: { _id: 1 } }) : null;
    if (!owner) throw new Error(`api key ${key.id}: client ${String(key.clientId)} does not exist`);
    // As in SQL, a new key starts unrevoked.
    await this.keys.insertOne({ _id: key.id, keyHash: key.keyHash, clientId: key.clientId, createdAt: key.createdAt });
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
