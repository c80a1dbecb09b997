import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  ConflictError,
  DomainError,
  FailedPreconditionError,
  NotFoundError,
  PermissionDeniedError,
  QuotaExceededError,
  StoreFullError,
  StoreUnavailableError,
  UnauthenticatedError,
  ValidationError,
  WatcherTooSlowError,
} from "../domain/errors.js";
import { callFields } from "./interceptors/logging.js";
import { watchedStream } from "./interceptors/watched-stream.js";

/** Domain error class → Connect code. The one place this mapping lives. */
const CODES: ReadonlyArray<[new (...args: never[]) => DomainError, Code]> = [
  [ValidationError, Code.InvalidArgument],
  [UnauthenticatedError, Code.Unauthenticated],
  [PermissionDeniedError, Code.PermissionDenied],
  [NotFoundError, Code.NotFound],
  [ConflictError, Code.AlreadyExists],
  [FailedPreconditionError, Code.FailedPrecondition],
  [QuotaExceededError, Code.ResourceExhausted],
  [StoreUnavailableError, Code.Unavailable],
  [StoreFullError, Code.Unavailable],
  [WatcherTooSlowError, Code.ResourceExhausted],
];

/** A ConnectError for a known error; undefined for an unexpected one. */
export function toConnectError(error: unknown): ConnectError | undefined {
  if (error instanceof ConnectError) return error;
  if (error instanceof DomainError) {
    const code = CODES.find(([type]) => error instanceof type)?.[1] ?? Code.Internal;
    return new ConnectError(error.message, code);
  }
  return undefined;
}

/** Maps domain errors to Connect codes; hides unexpected ones behind `internal`. */
export function createErrorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const map = (error: unknown): ConnectError => {
      const mapped = toConnectError(error);
      if (error instanceof StoreUnavailableError) log.warn({ err: error, ...callFields(req) }, "store unavailable");
      if (error instanceof StoreFullError) log.warn({ err: error, ...callFields(req) }, "store full");
      if (mapped) return mapped;
      log.error({ err: error, ...callFields(req) }, "unexpected error");
      return new ConnectError("internal error", Code.Internal);
    };
    try {
      const res = await next(req);
      return res.stream ? { ...res, message: watchedStream(res.message, () => {}, map) } : res;
    } catch (error) {
      throw map(error);
    }
  };
}
