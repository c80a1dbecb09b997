import type { Collection, Filter } from "mongodb";
import { type JsonObject, SUBSCRIPTION_DELETED, type Subscription } from "../../domain/model.js";
import type { Cursor, QuotaInsert, QuotaKey, QuotaRefusal, SubscriptionStore } from "../../domain/ports.js";
import {
  type AttemptDoc,
  type ClientDoc,
  checkCursor,
  checkLimit,
  isString,
  type NotificationDoc,
  nextAttemptSeq,
  optional,
  type SubscriptionDoc,
  type ThrottleSlotDoc,
} from "./documents.js";

const OPTIONAL_FIELDS = [
  "nextPublicKeyPem",
  "nextPrivateKeyPem",
  "rotationDeadline",
  "failingSince",
  "failingNoticedAt",
  "disabledReason",
  "disabledAt",
  "rateLimitPerSecond",
  "sealedHeaders",
] as const;
type OptionalField = (typeof OPTIONAL_FIELDS)[number];

/** The optional fields that are set; undefined (and null) ones are left out rather than stored as null. */
const presentOptional = (s: { [K in OptionalField]?: Subscription[K] | null }): Pick<Subscription, OptionalField> => ({
  ...optional("nextPublicKeyPem", s.nextPublicKeyPem),
  ...optional("nextPrivateKeyPem", s.nextPrivateKeyPem),
  ...optional("rotationDeadline", s.rotationDeadline),
  ...optional("failingSince", s.failingSince),
  ...optional("failingNoticedAt", s.failingNoticedAt),
  ...optional("disabledReason", s.disabledReason),
  ...optional("disabledAt", s.disabledAt),
  ...optional("rateLimitPerSecond", s.rateLimitPerSecond),
  ...optional("sealedHeaders", s.sealedHeaders),
});

const filterField = (s: Subscription): { filterJson?: string } => (s.filter ? { filterJson: JSON.stringify(s.filter) } : {});

// Field by field, so a stray document field never leaks into the record and a stored null reads as absent.
export const toSubscription = (d: SubscriptionDoc): Subscription => ({
  id: d._id,
  clientId: d.clientId,
  event: d.event,
  url: d.url,
  description: d.description,
  enabled: d.enabled,
  signatureScheme: d.signatureScheme ?? "RSA_SHA256",
  publicKeyPem: d.publicKeyPem,
  privateKeyPem: d.privateKeyPem,
  ...presentOptional(d),
  ...(d.filterJson ? { filter: JSON.parse(d.filterJson) as JsonObject } : {}),
  ...optional("leaseExpiresAt", d.leaseExpiresAt),
  createdAt: d.createdAt,
  updatedAt: d.updatedAt,
});

/** Deletes a removed subscription's notifications in chunks, so no command nears the 16 MB limit. */
const DELETE_BATCH = 1000;

export class MongoSubscriptionStore implements SubscriptionStore {
  constructor(
    private readonly subscriptions: Collection<SubscriptionDoc>,
    private readonly clients: Collection<ClientDoc>,
    private readonly notifications: Collection<NotificationDoc>,
    private readonly attempts: Collection<AttemptDoc>,
    private readonly throttleSlots: Collection<ThrottleSlotDoc>,
  ) {}

  async insert(s: Subscription): Promise<void> {
    // Stands in for the SQL foreign key on client_id.
    const owner = isString(s.clientId) ? await this.clients.findOne({ _id: s.clientId }, { projection: { _id: 1 } }) : null;
    if (!owner) throw new Error(`subscription ${s.id}: client ${String(s.clientId)} does not exist`);
    await this.subscriptions.insertOne({
      _id: s.id,
      clientId: s.clientId,
      event: s.event,
      url: s.url,
      description: s.description,
      enabled: s.enabled,
      signatureScheme: s.signatureScheme,
      publicKeyPem: s.publicKeyPem,
      privateKeyPem: s.privateKeyPem,
      ...presentOptional(s),
      ...filterField(s),
      // Not among the optional fields `update` writes: renewals alone move it.
      ...optional("leaseExpiresAt", s.leaseExpiresAt),
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
    });
  }

  /**
   * Without a transaction: checked, inserted, then checked again counting
   * every subscription inserted meanwhile, its own among them; one that
   * fails the second check deletes itself (as `delete` does) and is refused.
   * Two creates at once past the limit can then both be refused, never both
   * kept.
   */
  async insertWithinQuota(s: Subscription, defaultQuota: number): Promise<QuotaInsert> {
    const quota = await this.#quota(s, defaultQuota);
    const before = await this.#refusal(s, quota, false);
    if (before) return before;
    await this.insert(s);
    const after = await this.#refusal(s, quota, true);
    if (!after) return { inserted: true };
    await this.delete(s.id);
    return after;
  }

  async refusal(s: QuotaKey, defaultQuota: number): Promise<QuotaRefusal | undefined> {
    return this.#refusal(s, await this.#quota(s, defaultQuota), false);
  }

  /** The client's quota: its own, else `defaultQuota`. */
  async #quota(s: QuotaKey, defaultQuota: number): Promise<number> {
    if (!isString(s.clientId)) throw new Error(`subscription ${s.id}: client ${String(s.clientId)} does not exist`);
    const owner = await this.clients.findOne({ _id: s.clientId }, { projection: { maxSubscriptions: 1 } });
    if (!owner) throw new Error(`subscription ${s.id}: client ${s.clientId} does not exist`);
    return owner.maxSubscriptions ?? defaultQuota;
  }

  /** Why `s` may not be (or stay) inserted: another to its event and URL with its scheme, or its client's quota used up. */
  async #refusal(s: QuotaKey, quota: number, inserted: boolean): Promise<QuotaRefusal | undefined> {
    const [same] = await this.subscriptions
      // A document without a scheme is RSA_SHA256's (toSubscription).
      .find({
        clientId: s.clientId,
        url: s.url,
        event: s.event,
        signatureScheme:
          s.signatureScheme === "RSA_SHA256" ? { $nin: ["STANDARD_WEBHOOKS", "STANDARD_WEBHOOKS_ED25519"] } : s.signatureScheme,
        _id: { $ne: s.id },
      })
      .sort({ createdAt: 1, _id: 1 })
      .limit(1)
      .project<{ _id: string }>({ _id: 1 })
      .toArray();
    if (same) return { inserted: false, duplicateOf: same._id };
    const held = await this.subscriptions.countDocuments({ clientId: s.clientId });
    return held > (inserted ? quota : quota - 1) ? { inserted: false, quota } : undefined;
  }

  async get(id: string): Promise<Subscription | undefined> {
    if (!isString(id)) return undefined;
    const doc = await this.subscriptions.findOne({ _id: id });
    return doc ? toSubscription(doc) : undefined;
  }

  async findByUrl(clientId: string, url: string): Promise<Subscription[]> {
    if (!isString(clientId) || !isString(url)) return [];
    const docs = await this.subscriptions.find({ clientId, url }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(toSubscription);
  }

  async listByClient(clientId: string, limit: number, after?: Cursor): Promise<Subscription[]> {
    checkLimit(limit);
    if (limit === 0 || !isString(clientId)) return [];
    const filter: Filter<SubscriptionDoc> = { clientId };
    if (after !== undefined) {
      const { createdAt, id } = checkCursor(after);
      // (createdAt, _id) > (cursor) as SQL's row comparison; the $gte bound lets the index seek.
      filter.createdAt = { $gte: createdAt };
      filter.$or = [{ createdAt: { $gt: createdAt } }, { _id: { $gt: id } }];
    }
    const docs = await this.subscriptions.find(filter).sort({ createdAt: 1, _id: 1 }).limit(limit).toArray();
    return docs.map(toSubscription);
  }

  async listEnabledForEvent(clientId: string, event: string): Promise<Subscription[]> {
    if (!isString(clientId) || !isString(event)) return [];
    // `enabled: true` in the filter lets the planner use the partial index.
    const docs = await this.subscriptions.find({ clientId, event, enabled: true }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(toSubscription);
  }

  async update(s: Subscription, expectedUpdatedAt: Date): Promise<boolean> {
    if (!isString(s.id)) return false;
    // The streak belongs to the delivery worker (markFailing/markHealthy/noticeFailing): never written here.
    const { failingSince: _streak, failingNoticedAt: _noticed, ...present } = presentOptional(s);
    // Absent optional fields are removed, as SQL writes NULL into their columns.
    const absent: string[] = OPTIONAL_FIELDS.filter(
      (field) => field !== "failingSince" && field !== "failingNoticedAt" && !(field in present),
    );
    if (!s.filter) absent.push("filterJson");
    const { matchedCount } = await this.subscriptions.updateOne(
      // Only if nobody changed it since it was read (optimistic concurrency).
      { _id: s.id, updatedAt: expectedUpdatedAt },
      {
        $set: {
          url: s.url,
          description: s.description,
          enabled: s.enabled,
          publicKeyPem: s.publicKeyPem,
          privateKeyPem: s.privateKeyPem,
          ...present,
          ...filterField(s),
          updatedAt: s.updatedAt,
        },
        // Servers before 5.0 refuse an empty operator document.
        ...(absent.length > 0 ? { $unset: Object.fromEntries(absent.map((field) => [field, ""])) } : {}),
      },
    );
    return matchedCount === 1;
  }

  delete(id: string): Promise<boolean> {
    return this.#delete(id);
  }

  async renewLeases(ids: readonly string[], until: Date): Promise<void> {
    const strings = ids.filter(isString);
    if (strings.length === 0) return;
    await this.subscriptions.updateMany({ _id: { $in: strings }, leaseExpiresAt: { $type: "date" } }, { $set: { leaseExpiresAt: until } });
  }

  async listLeaseEnded(now: Date, limit: number): Promise<string[]> {
    checkLimit(limit);
    if (limit === 0) return [];
    const docs = await this.subscriptions
      .find({ leaseExpiresAt: { $lt: now } })
      .sort({ leaseExpiresAt: 1 })
      .limit(limit)
      .project<{ _id: string }>({ _id: 1 })
      .toArray();
    return docs.map((doc) => doc._id);
  }

  deleteLeaseEnded(id: string, now: Date): Promise<boolean> {
    return this.#delete(id, now);
  }

  /** Deletes it, when `leaseEndedBy` is given only if its lease ended before then. */
  async #delete(id: string, leaseEndedBy?: Date): Promise<boolean> {
    if (!isString(id)) return false;
    const { deletedCount } = await this.subscriptions.deleteOne(
      leaseEndedBy ? { _id: id, leaseExpiresAt: { $lt: leaseEndedBy } } : { _id: id },
    );
    if (deletedCount !== 1) return false;
    // No transaction: the subscription goes first, then each notification still pending ends as failed,
    // its last attempt saying why (as the SQL statement does). A crash in between leaves a pending one
    // for its next attempt to end the same way (the worker finds the subscription gone).
    for (;;) {
      const pending = await this.notifications
        .find({ subscriptionId: id, status: "pending" })
        .limit(DELETE_BATCH)
        .project<{ _id: string; attemptCount: number }>({ _id: 1, attemptCount: 1 })
        .toArray();
      if (pending.length === 0) {
        // Its throttle slot goes last, once no job of it can take one (the SQL foreign key cascades).
        await this.throttleSlots.deleteOne({ _id: id });
        return true;
      }
      const now = new Date();
      await this.attempts.insertMany(
        pending.map((doc) => ({
          seq: nextAttemptSeq(),
          notificationId: doc._id,
          attempt: doc.attemptCount,
          startedAt: now,
          durationMs: 0,
          error: SUBSCRIPTION_DELETED,
          succeeded: false,
        })),
      );
      await this.notifications.updateMany(
        { _id: { $in: pending.map((doc) => doc._id) }, status: "pending" },
        { $set: { status: "failed", updatedAt: now }, $inc: { attemptCount: 1 } },
      );
    }
  }

  async markFailing(id: string, at: Date): Promise<Date | undefined> {
    if (!isString(id)) return undefined;
    // One atomic step like SQL's COALESCE ... RETURNING: a running streak keeps its start.
    const doc = await this.subscriptions.findOneAndUpdate(
      { _id: id },
      [{ $set: { failingSince: { $ifNull: ["$failingSince", { $literal: at }] } } }],
      { returnDocument: "after", projection: { failingSince: 1 } },
    );
    return doc?.failingSince ?? undefined;
  }

  async markHealthy(id: string): Promise<void> {
    if (!isString(id)) return;
    // The filter skips the write when no streak runs, as the SQL WHERE does.
    await this.subscriptions.updateOne(
      { _id: id, failingSince: { $type: "date" } },
      { $unset: { failingSince: "", failingNoticedAt: "" } },
    );
  }

  async claimRotationsEnding(by: Date, now: Date): Promise<Subscription[]> {
    const due = await this.subscriptions
      .find({ rotationDeadline: { $gt: now, $lte: by }, enabled: true, nextPublicKeyPem: { $type: "string" } })
      .toArray();
    const claimed: Subscription[] = [];
    for (const doc of due) {
      // Claimed once per deadline: another instance's claim, or an earlier one, leaves it as it is.
      const { modifiedCount } = await this.subscriptions.updateOne(
        { _id: doc._id, rotationDeadline: doc.rotationDeadline, rotationNoticedFor: { $ne: doc.rotationDeadline } },
        { $set: { rotationNoticedFor: doc.rotationDeadline } },
      );
      if (modifiedCount === 1) claimed.push(toSubscription(doc));
    }
    return claimed;
  }

  async noticeFailing(id: string, since: Date, at: Date): Promise<boolean> {
    if (!isString(id)) return false;
    const { modifiedCount } = await this.subscriptions.updateOne(
      { _id: id, failingSince: since, failingNoticedAt: { $exists: false } },
      { $set: { failingNoticedAt: at } },
    );
    return modifiedCount === 1;
  }

  async disable(id: string, reason: string, at: Date): Promise<boolean> {
    if (!isString(id)) return false;
    const { modifiedCount } = await this.subscriptions.updateOne(
      { _id: id, enabled: true },
      { $set: { enabled: false, disabledReason: reason, disabledAt: at, updatedAt: at } },
    );
    return modifiedCount === 1;
  }
}
