import { createHash } from "node:crypto";
import type { Agenda, Job } from "agenda";

/**
 * Agenda 6.2.6 runs each job beside a liveness check that sleeps half the
 * lock lifetime (`await delay(timeout)`) and is never woken when the job
 * ends: every finished job, with its attributes, promises and closures,
 * stays reachable from that timer for lockLifetime / 2 (15 s with the
 * default timeout). At 2,500 deliveries/s that is ~40,000 dead jobs
 * promoted to the old generation, and the collector's work that follows.
 *
 * `runOrRetry` below is Agenda's own method with one change: the check's
 * timer is cleared when the job ends. Agenda offers no documented way in
 * (the method is private to its JobProcessor), so:
 * - agenda is pinned to an exact version in package.json;
 * - the patch refuses to apply (the engine fails to start, loudly) unless
 *   the method it replaces has exactly the source it was written against;
 * - test/delivery/job-processor-patch.test.ts fails if it no longer applies
 *   or if finished jobs keep their timers again.
 */

/** sha256 of agenda 6.2.6's JobProcessor.prototype.runOrRetry source. */
export const PATCHED_SOURCE_SHA256 = "90a7f8772fe8ecea2be9e515b959e21647323449f5606101139b74836c82baa5";

type Definition = { concurrency?: number; lockLifetime: number };

/** The parts of Agenda's JobProcessor that runOrRetry uses. */
interface ProcessorInternals {
  isRunning: boolean;
  agenda: Agenda & {
    definitions: Record<string, Definition>;
    logJobEvent(entry: Record<string, unknown>): void;
  };
  jobStatus: Record<string, { running: number } | undefined>;
  runningJobs: Job[];
  lockedJobs: Job[];
  maxConcurrency: number;
  processEvery: number;
  updateStatus(name: string, key: "running" | "locked", change: number): void;
  enqueueJob(job: Job): void;
  jobProcessing(): void;
  runOrRetry(job: Job): Promise<void>;
}

const PATCHED = Symbol("runOrRetry patched");

export function sourceDigest(fn: (...args: never[]) => unknown): string {
  return createHash("sha256").update(fn.toString()).digest("hex");
}

/**
 * Applies the patch to the job processor `agenda.start()` creates, before
 * it can run a job: the processor is caught as Agenda assigns it.
 */
export function patchJobProcessorOf(agenda: Agenda): void {
  const target = agenda as unknown as { jobProcessor?: ProcessorInternals };
  let processor = target.jobProcessor;
  if (processor) throw new Error("the job processor patch must be applied before agenda.start()");
  Object.defineProperty(target, "jobProcessor", {
    configurable: true,
    enumerable: true,
    get: () => processor,
    set: (value: (ProcessorInternals & { stop(): unknown }) | undefined) => {
      if (value) {
        try {
          patchPrototype(Object.getPrototypeOf(value) as ProcessorInternals & { [PATCHED]?: true });
        } catch (error) {
          // Its constructor already started polling: stopped here, or nothing would stop it.
          value.stop();
          throw error;
        }
      }
      processor = value;
    },
  });
}

function patchPrototype(prototype: ProcessorInternals & { [PATCHED]?: true }): void {
  if (prototype[PATCHED]) return;
  const digest = sourceDigest(prototype.runOrRetry);
  if (digest !== PATCHED_SOURCE_SHA256) {
    throw new Error(
      `agenda's JobProcessor.runOrRetry is not the one src/delivery/job-processor-patch.ts replaces (sha256 ${digest}); ` +
        "review the patch against the installed agenda before changing its version",
    );
  }
  prototype.runOrRetry = runOrRetry;
  prototype[PATCHED] = true;
}

/** Agenda 6.2.6's JobProcessor.runOrRetry (MIT), its liveness timer cleared when the job ends. */
async function runOrRetry(this: ProcessorInternals, job: Job): Promise<void> {
  if (!this.isRunning) return;
  const name = job.attrs.name;
  const definition = this.agenda.definitions[name];
  if (!definition) throw new Error(`no definition for job ${name}`);
  const status = this.jobStatus[name];
  if ((!definition.concurrency || !status || status.running < definition.concurrency) && this.runningJobs.length < this.maxConcurrency) {
    this.runningJobs.push(job);
    this.updateStatus(name, "running", 1);
    let jobIsRunning = true;
    let aliveTimer: NodeJS.Timeout | undefined;
    try {
      const checkIfJobIsStillAlive = async () => {
        const timeout = Math.max(this.processEvery / 2, definition.lockLifetime / 2);
        do {
          await new Promise((resolve) => {
            aliveTimer = setTimeout(resolve, timeout);
          });
          if (!jobIsRunning) return;
          if (await job.isExpired()) {
            this.agenda.logJobEvent({
              level: "warn",
              event: "expired",
              jobId: job.attrs._id?.toString(),
              jobName: name,
              message: "job expired (lock lifetime exceeded)",
            });
            throw new Error(
              `execution of '${name}' canceled, execution took more than ${definition.lockLifetime}ms. Call touch() for long running jobs to keep them alive.`,
            );
          }
          if (!job.attrs.lockedAt) {
            throw new Error(
              `execution of '${name}' canceled, no lockedAt date found. Ensure to call touch() for long running jobs to keep them alive.`,
            );
          }
        } while (jobIsRunning);
      };
      await Promise.race([job.run(), checkIfJobIsStillAlive()]);
      if (!this.runningJobs.includes(job)) throw new Error(`callback already called - job ${name} already marked complete`);
    } catch (error) {
      job.cancel(error instanceof Error ? error : undefined);
      this.agenda.logJobEvent({
        level: "error",
        event: "fail",
        jobId: job.attrs._id?.toString(),
        jobName: name,
        message: `job processing error: ${error instanceof Error ? error.message : String(error)}`,
        error: error instanceof Error ? error.message : String(error),
      });
      this.agenda.emit("error", error instanceof Error ? error : new Error(String(error)));
    } finally {
      jobIsRunning = false;
      // The change: a finished job is not kept reachable by its sleeping check.
      clearTimeout(aliveTimer);
      removeJob(this.runningJobs, job, "running");
      this.updateStatus(name, "running", -1);
      removeJob(this.lockedJobs, job, "locked");
      this.updateStatus(name, "locked", -1);
    }
    setImmediate(() => this.jobProcessing());
    return;
  }
  this.enqueueJob(job);
}

function removeJob(jobs: Job[], job: Job, queue: string): void {
  let index = jobs.indexOf(job);
  if (index === -1) index = jobs.findIndex((other) => other.attrs._id?.toString() === job.attrs._id?.toString());
  if (index === -1) throw new Error(`cannot find job ${job.attrs._id} in ${queue} jobs queue?`);
  jobs.splice(index, 1);
}
