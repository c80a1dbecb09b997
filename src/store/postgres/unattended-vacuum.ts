import type { SqlPool } from "./sql-pool.js";

/** SQL: table `c`'s setting `name`, else the server's. */
function setting(name: string): string {
  return `COALESCE((SELECT option_value FROM pg_options_to_table(c.reloptions) WHERE option_name = '${name}')::float8, current_setting('${name}')::float8)`;
}

/** SQL: the count past which autovacuum would act on table `c`: its threshold plus scale factor times its estimated rows (the table's settings, else the server's). */
function autovacuumLimit(threshold: string, scaleFactor: string): string {
  return `(${setting(threshold)} + ${setting(scaleFactor)} * GREATEST(c.reltuples, 0))`;
}

/**
 * Our tables (named wh_…, in the search path) that autovacuum leaves alone:
 * all of them when the server's `autovacuum` is off, else those with
 * `autovacuum_enabled = false`. Read at every round, so that turning
 * autovacuum on (a reload) ends our vacuuming. `owned`: we may vacuum it
 * (its owner is a role we are). What is due, as autovacuum reckons it up to
 * PostgreSQL 17 (a threshold plus a scale factor times the table's
 * estimated rows, each the table's setting, else the server's):
 * - `vacuum`: as many dead rows as `autovacuum_vacuum_threshold` plus
 *   `autovacuum_vacuum_scale_factor` (50 + 20 % by default), or as many rows
 *   inserted since the last vacuum as the `…_insert_…` pair (1,000 + 20 %;
 *   a threshold of -1 turns it off): it marks pages all-visible and freezes them;
 * - `analyze`: as many rows changed since the last analyze as the
 *   `autovacuum_analyze_…` pair (50 + 10 %): the planner's statistics.
 * Each VACUUM reads every index of its table whole, so a large table (the
 * notifications) is vacuumed as rarely as autovacuum would, and the job
 * table, small but churning, at nearly every round; the most dead rows for
 * their table's size go first.
 */
const UNATTENDED = `
  SELECT format('%I.%I', n.nspname, c.relname) AS name,
         pg_has_role(c.relowner, 'USAGE') AS owned,
         COALESCE(s.n_dead_tup, 0) > ${autovacuumLimit("autovacuum_vacuum_threshold", "autovacuum_vacuum_scale_factor")}
           OR (${setting("autovacuum_vacuum_insert_threshold")} >= 0
             AND COALESCE(s.n_ins_since_vacuum, 0) > ${autovacuumLimit("autovacuum_vacuum_insert_threshold", "autovacuum_vacuum_insert_scale_factor")}) AS vacuum,
         COALESCE(s.n_mod_since_analyze, 0) > ${autovacuumLimit("autovacuum_analyze_threshold", "autovacuum_analyze_scale_factor")} AS analyze
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
  CROSS JOIN LATERAL (
    SELECT COALESCE(bool_or(option_name = 'autovacuum_enabled' AND NOT option_value::bool), false) AS disabled
    FROM pg_options_to_table(c.reloptions)
  ) o
  WHERE c.relkind = 'r' AND starts_with(c.relname, 'wh_') AND n.nspname = ANY(current_schemas(false))
    AND (current_setting('autovacuum') = 'off' OR o.disabled)
  ORDER BY COALESCE(s.n_dead_tup, 0) / GREATEST(c.reltuples, 1) DESC, 1`;

/** Rounds under way at once: a long VACUUM of a large table does not hold up the next round's others. */
const ROUNDS_AT_ONCE = 2;

export interface VacuumHandlers {
  /** There came to be tables left to us (`notOwned`: of those, the ones we may not vacuum), or none any more (both empty). */
  onUnattended(tables: string[], notOwned: string[]): void;
  /** The first failure since the last round that went through. */
  onError(error: Error): void;
  /** A round went through after failures. */
  onRecovered(): void;
}

/**
 * Every `everyMs`, vacuums and analyzes those of our tables that autovacuum
 * would, while it does not. The delivery jobs' table has every row inserted, locked and
 * deleted, and each attempt updates its notification: without VACUUM their
 * space is never reused and every scan wades through the dead rows (in a
 * probe, 370,000 of them and 86 MB for 2,000 live jobs after eight minutes
 * of load). Each table is vacuumed on its own connection with no statement
 * timeout, a table at a time (`pool` is the store's, whose held connections
 * survive losing the server: see reportingUnavailable); `SKIP_LOCKED` passes over one another
 * instance is vacuuming. `stop()` cancels the VACUUMs under way (a VACUUM
 * cancelled loses only its own progress) so that closing never waits on one.
 */
export class UnattendedVacuum {
  readonly #timer: NodeJS.Timeout;
  readonly #rounds = new Set<Promise<void>>();
  /** Tables being vacuumed, and the server process doing it. */
  readonly #vacuuming = new Map<string, number>();
  #stopped = false;
  #unattended = false;
  #failing = false;

  private constructor(
    private readonly pool: SqlPool,
    private readonly handlers: VacuumHandlers,
    everyMs: number,
  ) {
    this.#timer = setInterval(() => this.#tick(), everyMs);
    this.#timer.unref();
  }

  static start(pool: SqlPool, everyMs: number, handlers: VacuumHandlers): UnattendedVacuum {
    const vacuum = new UnattendedVacuum(pool, handlers, everyMs);
    vacuum.#tick();
    return vacuum;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    const pids = [...this.#vacuuming.values()];
    if (pids.length > 0) await this.pool.query("SELECT pg_cancel_backend(pid) FROM unnest($1::int[]) AS pid", [pids]).catch(() => {});
    await Promise.all(this.#rounds);
  }

  #tick(): void {
    if (this.#stopped || this.#rounds.size >= ROUNDS_AT_ONCE) return;
    const round: Promise<void> = this.#round()
      .then(
        () => {
          if (!this.#failing) return;
          this.#failing = false;
          this.handlers.onRecovered();
        },
        (error: Error) => {
          if (this.#stopped || this.#failing) return;
          this.#failing = true;
          this.handlers.onError(error);
        },
      )
      .finally(() => this.#rounds.delete(round));
    this.#rounds.add(round);
  }

  async #round(): Promise<void> {
    const { rows } = await this.pool.query<{ name: string; owned: boolean; vacuum: boolean; analyze: boolean }>(UNATTENDED);
    if (rows.length > 0 !== this.#unattended) {
      this.#unattended = rows.length > 0;
      this.handlers.onUnattended(
        rows.map((row) => row.name),
        rows.filter((row) => !row.owned).map((row) => row.name),
      );
    }
    for (const row of rows) {
      if (this.#stopped) return;
      if (row.owned && (row.vacuum || row.analyze) && !this.#vacuuming.has(row.name)) await this.#maintain(row.name, row);
    }
  }

  /** VACUUM, with ANALYZE if that is due too, or ANALYZE alone. */
  async #maintain(table: string, due: { vacuum: boolean; analyze: boolean }): Promise<void> {
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      // A role's or database's statement_timeout would cut a long VACUUM short at every round.
      const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid, set_config('statement_timeout', '0', false)");
      this.#vacuuming.set(table, rows[0]?.pid as number);
      if (this.#stopped) return;
      await client.query(due.vacuum ? `VACUUM (SKIP_LOCKED${due.analyze ? ", ANALYZE" : ""}) ${table}` : `ANALYZE (SKIP_LOCKED) ${table}`);
      await client.query("RESET statement_timeout");
    } catch (error) {
      failed = error as Error;
      throw error;
    } finally {
      this.#vacuuming.delete(table);
      client.release(failed);
    }
  }
}
