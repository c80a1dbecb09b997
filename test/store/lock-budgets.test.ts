import test from "ava";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { type LockRequest, scanWindow, withinBudgets } from "../../src/delivery/fairness/budgets.js";
import type { JobStore, LockedBatch, NewDelivery } from "../../src/delivery/job-store.js";
import { newId } from "../../src/domain/ids.js";
import type { Subscription } from "../../src/domain/model.js";
import { openJobs } from "../../src/store/open-jobs.js";
import { openStore } from "../../src/store/open-store.js";
import { FAST_TEST_ENV } from "../helpers/service.js";
import { type StoreTarget, storeTargets } from "../helpers/stores.js";
import { subscriptionRecord } from "../helpers/subscriptions.js";

/**
 * A lock's budgets have one definition: `withinBudgets` applied to the first
 * `scanWindow(request)` due rows, oldest due first and ties by id, leaving
 * out the endpoints and clients whose budget is 0 (fairness/budgets.ts).
 * PostgreSQL's lock statement restates it in SQL; MongoDB's store calls it
 * on the rows it read. Here each store locks for many requests over the
 * same few hundred due jobs, handing the locks back after each, and must
 * answer what the definition answers from the same rows.
 */
const log = pino({ level: "silent" });
const SEED = 20260101;

/** A small deterministic generator (mulberry32): the same jobs and requests on every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

/** A job as the test wrote it. */
interface Row {
  id: string;
  endpoint: string;
  clientId: string;
  dueAt: number;
}

/** What `request` locks from `rows` at `now`, by the definition. */
function expected(rows: readonly Row[], request: LockRequest, now: number) {
  const none = (budgets: ReadonlyMap<string, number>) => new Set([...budgets].filter(([, budget]) => budget === 0).map(([key]) => key));
  const [noEndpoint, noClient] = [none(request.endpointBudgets), none(request.clientBudgets)];
  const scan = scanWindow(request);
  const read = rows
    .filter((row) => row.dueAt <= now && !noEndpoint.has(row.endpoint) && !noClient.has(row.clientId))
    .sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, scan);
  const { chosen, passedOver } = withinBudgets(read, request);
  return { ids: chosen.map((row) => row.id), drained: read.length < scan, passedOver };
}

/**
 * How due times fall: `distinct`, each job its own millisecond; `together`,
 * to the second, so that many fall due together, and 30 of them at one
 * instant (a fan-out), as jobs do when one statement inserts them.
 */
type Timing = "distinct" | "together";

/**
 * Four clients with one to three endpoints each, some busier than others;
 * 340 jobs due within the last ten minutes and 10 not for an hour. Ids come
 * from the generator too, so that ties fall the same way on every run.
 */
function plan(next: () => number, clientIds: readonly string[], now: number, timing: Timing) {
  const endpoints = clientIds.map((clientId, i) =>
    Array.from({ length: [3, 2, 1, 2][i] ?? 1 }, (_, k) => `${clientId} https://e${k}.example`),
  );
  const weights = [0.4, 0.3, 0.2, 0.1];
  const hex = () =>
    Array.from({ length: 4 }, () =>
      Math.floor(next() * 2 ** 32)
        .toString(16)
        .padStart(8, "0"),
    ).join("");
  const rows = Array.from({ length: 350 }, (_, i): Row => {
    let roll = next();
    let client = 0;
    while (client < weights.length - 1 && roll >= (weights[client] ?? 0)) roll -= weights[client++] ?? 0;
    const own = endpoints[client] ?? [];
    const endpoint = own[Math.floor(next() * own.length)] ?? "";
    const second = now - 600_000 + Math.floor(next() * 600) * 1000;
    const dueAt = i >= 340 ? now + 3_600_000 : timing === "distinct" ? second + i : i < 30 ? now - 300_000 : second;
    return { id: `ntf_${hex()}`, endpoint, clientId: clientIds[client] ?? "", dueAt };
  });
  return { rows, endpoints: endpoints.flat() };
}

/** Requests that exercise each part of the rule, then random ones. */
function requests(next: () => number, endpoints: readonly string[], clientIds: readonly string[]): Array<[string, LockRequest]> {
  const [c0, c1, c2, c3] = clientIds as [string, string, string, string];
  const [e0, e1, e2, e3] = endpoints as [string, string, string, string];
  const request = (limit: number, fields: Partial<LockRequest> = {}): LockRequest => ({
    limit,
    endpointBudgets: new Map(),
    clientBudgets: new Map(),
    defaultPerEndpoint: 1000,
    defaultPerClient: 1000,
    ...fields,
  });
  const fixed: Array<[string, LockRequest]> = [
    ["oldest first, no budget in the way", request(40)],
    ["one job", request(1)],
    ["no job", request(0)],
    ["more than is due", request(1000)],
    ["every endpoint 3, every client 8", request(60, { defaultPerEndpoint: 3, defaultPerClient: 8 })],
    [
      "listed endpoints, one with none",
      request(50, {
        endpointBudgets: new Map([
          [e0, 0],
          [e1, 10],
          [e2, 1],
        ]),
        defaultPerEndpoint: 4,
        defaultPerClient: 12,
      }),
    ],
    [
      "a client with none, one with a few, one with many",
      request(50, {
        clientBudgets: new Map([
          [c0, 0],
          [c1, 2],
          [c2, 40],
        ]),
        defaultPerClient: 5,
      }),
    ],
    [
      "endpoint budgets under a client budget",
      request(100, {
        endpointBudgets: new Map([
          [e0, 2],
          [e3, 20],
        ]),
        clientBudgets: new Map([[c3, 3]]),
        defaultPerEndpoint: 6,
        defaultPerClient: 9,
      }),
    ],
    ["strangers get nothing", request(30, { endpointBudgets: new Map([[e1, 5]]), defaultPerEndpoint: 0 })],
    ["clients get nothing unless listed", request(30, { clientBudgets: new Map([[c1, 7]]), defaultPerClient: 0 })],
    ["every budget 0", request(30, { endpointBudgets: new Map(endpoints.map((e) => [e, 0])), defaultPerEndpoint: 0, defaultPerClient: 0 })],
    ["every client 0", request(30, { clientBudgets: new Map(clientIds.map((c) => [c, 0])) })],
  ];
  const upTo = (max: number) => Math.floor(next() * (max + 1));
  const randomOnes = Array.from({ length: 40 }, (_, i): [string, LockRequest] => {
    const endpointBudgets = new Map(endpoints.filter(() => next() < 0.3).map((endpoint) => [endpoint, upTo(8)]));
    const clientBudgets = new Map(clientIds.filter(() => next() < 0.3).map((clientId) => [clientId, upTo(25)]));
    return [`random ${i}`, request(upTo(80), { endpointBudgets, clientBudgets, defaultPerEndpoint: upTo(6), defaultPerClient: upTo(20) })];
  });
  return [...fixed, ...randomOnes];
}

/** A request as a line of an assertion's message. */
function described(name: string, request: LockRequest): string {
  return `${name}: ${JSON.stringify({ ...request, endpointBudgets: [...request.endpointBudgets], clientBudgets: [...request.clientBudgets] })}`;
}

interface Planned {
  jobs: JobStore;
  rows: Row[];
  lockRequests: Array<[string, LockRequest]>;
}

/** A fresh store on `target` holding the planned jobs, due as planned and unlocked; `cleanups`, run last first, close and remove it. */
async function storeWithJobs(target: StoreTarget, timing: Timing, cleanups: Array<() => Promise<void>>): Promise<Planned> {
  const created = await target.create();
  cleanups.push(() => created.cleanup());
  const opened = await openStore(loadConfig({ ...FAST_TEST_ENV, ...created.env }).store, log);
  cleanups.push(() => opened.close());
  const { jobs } = openJobs(opened.database, { owner: "lock-budgets", lockLifetimeMs: 600_000 });
  await jobs.prepare();
  const subscriptions = new Map<string, Subscription>();
  for (let i = 0; i < 4; i++) {
    const client = await opened.store.clients.ensureWithKey(`client ${i}`, newId("cli"));
    const subscription = subscriptionRecord(client.id);
    await opened.store.subscriptions.insert(subscription);
    subscriptions.set(client.id, subscription);
  }
  const next = random(SEED);
  const clientIds = [...subscriptions.keys()];
  const { rows, endpoints } = plan(next, clientIds, Date.now(), timing);
  const at = new Date();
  await jobs.insert(
    rows.map((row): NewDelivery => {
      const { id: subscriptionId, event } = subscriptions.get(row.clientId) as Subscription;
      const notification = { id: row.id, subscriptionId, clientId: row.clientId, event, body: "{}", attemptCount: 0 };
      return { notification: { ...notification, status: "pending", createdAt: at, updatedAt: at }, endpoint: row.endpoint };
    }),
  );
  // Every job locked at once, then handed back due when planned.
  const all = await jobs.lockDue({
    limit: 1000,
    endpointBudgets: new Map(),
    clientBudgets: new Map(),
    defaultPerEndpoint: 1000,
    defaultPerClient: 1000,
  });
  if (all.jobs.length !== rows.length) throw new Error(`locked ${all.jobs.length} of the ${rows.length} jobs just inserted`);
  const dueAt = new Map(rows.map((row) => [row.id, new Date(row.dueAt)]));
  for (const job of all.jobs) await jobs.reschedule({ id: job.id, heldLock: job.lockedAt }, dueAt.get(job.id) as Date);
  return { jobs, rows, lockRequests: requests(next, endpoints, clientIds) };
}

/** Locks for `request`, then hands the locks back, so that the next request finds the same jobs due. */
async function lockOnce(jobs: JobStore, request: LockRequest): Promise<LockedBatch> {
  const batch = await jobs.lockDue(request);
  await jobs.unlock(batch.jobs.map((job) => ({ id: job.id, heldLock: job.lockedAt })));
  return batch;
}

const sorted = (values: readonly string[]) => [...values].sort();

/** Where two lists of job ids part, with each job's due time (jobs due together show as such). */
function parting(locked: readonly string[], chosen: readonly string[], rows: readonly Row[]): string {
  const dueAt = new Map(rows.map((row) => [row.id, new Date(row.dueAt).toISOString()]));
  let from = 0;
  while (from < locked.length && locked[from] === chosen[from]) from++;
  const shown = (ids: readonly string[]) => JSON.stringify(ids.slice(from, from + 3).map((id) => `${id} due ${dueAt.get(id)}`));
  return `  from job ${from} on, of ${locked.length} locked: ${shown(locked)}\n  of ${chosen.length} chosen: ${shown(chosen)}`;
}

// The requests of one store take turns: each hands its locks back before the next.
for (const target of storeTargets()) {
  const cleanups: Array<() => Promise<void>> = [];
  const stores = new Map<Timing, Promise<Planned>>();
  const planned = (timing: Timing): Promise<Planned> => {
    const store = stores.get(timing) ?? storeWithJobs(target, timing, cleanups);
    stores.set(timing, store);
    return store;
  };
  test.after.always(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  for (const timing of ["distinct", "together"] as const) {
    const when = timing === "distinct" ? "jobs each due at its own time" : "jobs falling due together";
    test.serial(
      `${target.name}: a lock takes the jobs, in the order, that withinBudgets chooses from its scan window (${when})`,
      async (t) => {
        const { jobs, rows, lockRequests } = await planned(timing);
        const disagreements: string[] = [];
        for (const [name, request] of lockRequests) {
          const batch = await lockOnce(jobs, request);
          const want = expected(rows, request, Date.now());
          const locked = batch.jobs.map((job) => job.id);
          if (JSON.stringify(locked) !== JSON.stringify(want.ids))
            disagreements.push(`${described(name, request)}\n${parting(locked, want.ids, rows)}`);
          if (batch.drained !== want.drained)
            disagreements.push(`${described(name, request)}\n  drained ${batch.drained}, not ${want.drained}`);
        }
        t.deepEqual(disagreements, [], `${disagreements.length} of ${lockRequests.length} requests disagree`);
        t.like(await jobs.counts(), { due: 340, scheduled: 10, locked: 0 });
      },
    );
  }

  test.serial(`${target.name}: a lock names the endpoints and clients its budgets passed over, as withinBudgets does`, async (t) => {
    const { jobs, rows, lockRequests } = await planned("distinct");
    const disagreements: string[] = [];
    for (const [name, request] of lockRequests) {
      const { passedOver } = await lockOnce(jobs, request);
      const want = expected(rows, request, Date.now()).passedOver;
      const got = { endpoints: sorted(passedOver.endpoints), clients: sorted(passedOver.clients) };
      const chosen = { endpoints: sorted(want.endpoints), clients: sorted(want.clients) };
      if (JSON.stringify(got) !== JSON.stringify(chosen))
        disagreements.push(`${described(name, request)}\n  passed over ${JSON.stringify(got)}\n  by the rule ${JSON.stringify(chosen)}`);
    }
    t.deepEqual(disagreements, [], `${disagreements.length} of ${lockRequests.length} requests disagree`);
  });
}

if (!process.env.POSTGRES_URL) test.skip("postgres: set POSTGRES_URL to hold PostgreSQL's lock statement to withinBudgets too", () => {});
