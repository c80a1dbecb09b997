import { setFlagsFromString } from "node:v8";
import { PortInUseError } from "./api/transport/listener.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { StoreConnectError } from "./store/connect-error.js";
import { acquireDataDirLock, type DataDirLock, DataDirLockedError } from "./store/data-dir-lock.js";

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const log = createLogger(config.logLevel);
  // The embedded store's PostgreSQL is WebAssembly. V8 compiles it with its baseline compiler
  // (Liftoff) and then recompiles hot functions with its optimising one, which holds about 125 MB
  // more resident memory, for good, for a few per cent more throughput: memory is what the embedded
  // store is short of (docs/performance.md). Process-wide, so set here, before PGlite loads.
  if (config.store.kind === "embedded") setFlagsFromString("--liftoff-only");
  // Before anything else loads, so that every span has the provider; the SDK is loaded only when tracing is on.
  const tracing = config.tracing && (await import("./observability/tracing.js")).startTracing(config.tracing);
  if (config.tracing) log.info({ tracesUrl: config.tracing.tracesUrl }, "tracing on: spans go to the OTLP endpoint");
  const lock = config.store.kind === "embedded" ? await lockDataDir(config.store.dataDir) : undefined;
  // Imported once the configuration is known good: a bad setting is reported
  // without first loading every driver.
  const { startService } = await import("./service.js");
  const service = await startService(config, log).catch(async (error: unknown) => {
    await lock?.release();
    if (error instanceof PortInUseError || error instanceof StoreConnectError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  });
  const stop = (signal: string) => {
    log.info({ signal }, "signal received");
    service
      .stop()
      .then(() => lock?.release())
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

/** One process per embedded store: a second one on the same DATA_DIR would corrupt it. */
async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  try {
    return await acquireDataDirLock(dataDir);
  } catch (error) {
    const message = error instanceof DataDirLockedError ? error.message : `DATA_DIR ${dataDir} cannot be used: ${(error as Error).message}`;
    process.stderr.write(`${message}\n`);
    process.exit(2);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
