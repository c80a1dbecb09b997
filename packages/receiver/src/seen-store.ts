/**
 * Where a receiver remembers the jobs it processed, so that a retry or a
 * replay of one `X-JobId` runs the handler once. Three steps, so a failing
 * handler never marks a job seen:
 *
 * - `claim` before the handler: "claimed" hands this caller the job and a
 *   token; "in_progress" means another live claim holds it; "done" means it
 *   was processed already. A claim lapses after `leaseMs`, so a receiver that
 *   crashed mid-handler does not block the job's later attempts forever.
 * - `commit` after the handler succeeded: from then on claims answer "done",
 *   for as long as the store keeps the job.
 * - `release` after the handler failed: the job is unseen again and the
 *   service's next attempt processes it. A release whose claim lapsed and was
 *   taken over does nothing.
 *
 * Implementations: MemorySeenStore (one process), PostgresSeenStore (shared,
 * survives restarts); the README shows one for Redis.
 */
export interface SeenStore {
  claim(key: string, leaseMs: number): Promise<ClaimResult>;
  commit(key: string, token: string): Promise<void>;
  release(key: string, token: string): Promise<void>;
}

export type ClaimResult = { state: "claimed"; token: string } | { state: "in_progress" } | { state: "done" };
