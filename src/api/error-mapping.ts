import { Code, ConnectError } from "@connectrpc/connect";
import {
  ConflictError,
  DomainError,
  NotFoundError,
  PermissionDeniedError,
  StoreUnavailableError,
  UnauthenticatedError,
  ValidationError,
  WatcherTooSlowError,
} from "../domain/errors.js";

/** Domain error class → Connect code. The one place this mapping lives. */
const CODES: ReadonlyArray<[new (...args: never[]) => DomainError, Code]> = [
  [ValidationError, Code.InvalidArgument],
  [UnauthenticatedError, Code.Unauthenticated],
  [PermissionDeniedError, Code.PermissionDenied],
  [NotFoundError, Code.NotFound],
  [ConflictError, Code.AlreadyExists],
  [StoreUnavailableError, Code.Unavailable],
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
