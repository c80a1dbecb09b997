import { type Db, MongoBulkWriteError } from "mongodb";
import { collections, DUPLICATE_KEY } from "./documents.js";

/** A publish's (client, idempotency key) and the notification ids it stores. */
export interface KeyClaim {
  clientId: string;
  key: string;
  ids: string[];
}

/**
 * Stores each (client, key) with its ids unless it is stored already; the
 * compound `_id` decides. Answers, by claim index, the ids each key stored
 * before (absent: this call stored it). Any failure but a duplicate key
 * throws: a key may have been written before the reply was lost.
 */
export async function claimKeys(db: Db, claims: readonly KeyClaim[]): Promise<Map<number, string[]>> {
  const keys = collections(db).idempotencyKeys;
  const createdAt = new Date();
  let duplicates: number[] = [];
  try {
    await keys.insertMany(
      claims.map(({ clientId, key, ids }) => ({ _id: { clientId, key }, notificationIds: ids, createdAt })),
      { ordered: false },
    );
  } catch (error) {
    const failed = error instanceof MongoBulkWriteError ? [error.writeErrors].flat() : [];
    if (failed.length === 0 || failed.some((write) => write.code !== DUPLICATE_KEY)) throw error;
    duplicates = failed.map((write) => write.index);
  }
  const earlier = new Map<number, string[]>();
  if (duplicates.length === 0) return earlier;
  const idOf = (index: number) => {
    const { clientId, key } = claims[index] as KeyClaim;
    return { clientId, key };
  };
  const stored = await keys.find({ _id: { $in: duplicates.map(idOf) } }).toArray();
  const byKey = new Map(stored.map((doc) => [JSON.stringify([doc._id.clientId, doc._id.key]), doc.notificationIds]));
  for (const index of duplicates) {
    const { clientId, key } = idOf(index);
    earlier.set(index, byKey.get(JSON.stringify([clientId, key])) ?? []);
  }
  return earlier;
}
