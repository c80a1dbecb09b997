import type { SqlClient } from "./sql-pool.js";

/** A publish's (client, idempotency key) and the notification ids it would store. */
export interface KeyClaim {
  clientId: string;
  key: string;
  ids: readonly string[];
}

/**
 * Claims every key in one statement, inside the caller's transaction; a
 * concurrent transaction claiming one of them waits here for the other's
 * commit. The primary key (client_id, key) decides: a key already stored
 * keeps its ids. Answers, by claim index, the ids each key stored before
 * (absent: this call claimed it). Claims take row locks in (client, key)
 * order, so two batches sharing keys cannot deadlock.
 */
export async function claimKeys(client: SqlClient, claims: readonly KeyClaim[]): Promise<Map<number, string[]>> {
  const order = claims
    .map((claim, index) => ({ claim, index }))
    .sort((a, b) => compare(a.claim.clientId, b.claim.clientId) || compare(a.claim.key, b.claim.key));
  const { rows: claimed } = await client.query<{ client_id: string; key: string }>(
    `INSERT INTO wh_idempotency_keys (client_id, key, notification_ids, created_at)
     SELECT t.client_id, t.key, ARRAY(SELECT jsonb_array_elements_text(t.ids)), now()
     FROM unnest($1::text[], $2::text[], $3::jsonb[]) WITH ORDINALITY AS t (client_id, key, ids, n)
     ORDER BY t.n
     ON CONFLICT DO NOTHING
     RETURNING client_id, key`,
    [order.map(({ claim }) => claim.clientId), order.map(({ claim }) => claim.key), order.map(({ claim }) => JSON.stringify(claim.ids))],
  );
  const won = new Set(claimed.map((row) => pair(row.client_id, row.key)));
  const taken = order.filter(({ claim }) => !won.has(pair(claim.clientId, claim.key)));
  const earlier = new Map<number, string[]>();
  if (taken.length === 0) return earlier;
  const { rows } = await client.query<{ client_id: string; key: string; notification_ids: string[] }>(
    `SELECT k.client_id, k.key, k.notification_ids FROM wh_idempotency_keys k
     JOIN unnest($1::text[], $2::text[]) AS t (client_id, key) ON k.client_id = t.client_id AND k.key = t.key`,
    [taken.map(({ claim }) => claim.clientId), taken.map(({ claim }) => claim.key)],
  );
  const stored = new Map(rows.map((row) => [pair(row.client_id, row.key), row.notification_ids]));
  for (const { claim, index } of taken) earlier.set(index, stored.get(pair(claim.clientId, claim.key)) ?? []);
  return earlier;
}

const pair = (clientId: string, key: string) => JSON.stringify([clientId, key]);

/** Any fixed order will do, as long as every claimant uses the same one. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
