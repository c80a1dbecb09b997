import { type Db, MongoNetworkError, MongoNotConnectedError, MongoServerError, MongoServerSelectionError } from "mongodb";
import { StoreFullError, StoreUnavailableError } from "../../domain/errors.js";

/** OutOfDiskSpace: mongod refuses the work for want of disk space. */
const OUT_OF_DISK_SPACE = 14031;
/**
 * UserWritesBlocked: writes refused by setUserWriteBlockMode, which MongoDB
 * 8.0+ (and Atlas) uses with reason DiskUseThresholdExceeded when the disk is
 * nearly full; with another reason (a migration) the store is unavailable.
 */
const USER_WRITES_BLOCKED = 371;
/** A server shutting down, or a primary stepping down (an election): another one may answer soon. */
const GOING_AWAY = new Set([91, 189, 10107, 11600, 11602, 13435, 13436]);
/**
 * A socket's own error, which the driver (7.9) throws unwrapped when the
 * server closes the connection while a command waits to be written (its
 * `drain` wait in Connection.writeCommand rejects with the socket's EPIPE).
 */
const SOCKET_GONE = new Set(["EPIPE", "ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT"]);

/**
 * The error as the domain's: StoreFullError when mongod says its disk is
 * full, StoreUnavailableError when it cannot be reached (or is going away);
 * unchanged otherwise.
 */
export function asStoreError(error: unknown): unknown {
  if (error instanceof MongoServerError) {
    const full =
      error.code === OUT_OF_DISK_SPACE ||
      (error.code === USER_WRITES_BLOCKED && /disk ?use ?threshold/i.test(error.message)) ||
      /no space left on device/i.test(error.message);
    if (full) return new StoreFullError(error.message, { cause: error });
    if (error.code === USER_WRITES_BLOCKED || GOING_AWAY.has(Number(error.code))) return unavailable(error);
    return error;
  }
  const unreachable =
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    (error instanceof Error && SOCKET_GONE.has(String((error as NodeJS.ErrnoException).code)));
  return unreachable ? unavailable(error) : error;
}

function unavailable(error: Error): StoreUnavailableError {
  return new StoreUnavailableError(`the database is unreachable: ${error.message}`, { cause: error });
}

/**
 * `port` with every method's failure passed through `report` (which answers
 * the error to throw): the one place the MongoDB adapter's driver errors
 * become the domain's, as SQL pools do it on PostgreSQL.
 */
export function reportingErrors<T extends object>(port: T, report: (error: unknown) => unknown): T {
  const reporting = Object.create(port) as Record<string, unknown>;
  for (let layer: object | null = port; layer && layer !== Object.prototype; layer = Object.getPrototypeOf(layer)) {
    for (const [name, property] of Object.entries(Object.getOwnPropertyDescriptors(layer))) {
      const method = property.value;
      if (name === "constructor" || typeof method !== "function" || Object.hasOwn(reporting, name)) continue;
      reporting[name] = (...args: unknown[]) => {
        try {
          const result = method.apply(port, args);
          return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(report(error))) : result;
        } catch (error) {
          throw report(error);
        }
      };
    }
  }
  return reporting as T;
}

/** The probe's collection: a document of about a megabyte is written there and removed. */
const SPACE_PROBE = "wh_space_probe";

/** Writes about a megabyte and removes it: succeeds only while mongod takes writes that need room. */
export async function probeSpace(db: Db): Promise<void> {
  const probes = db.collection<{ _id: string; filler: string }>(SPACE_PROBE);
  const _id = `probe-${process.pid}-${Date.now()}`;
  try {
    await probes.insertOne({ _id, filler: "x".repeat(1 << 20) });
    await probes.deleteOne({ _id });
  } catch (error) {
    throw asStoreError(error);
  }
}
