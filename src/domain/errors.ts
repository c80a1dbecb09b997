/**
 * Typed domain errors. The domain throws these; exactly one place
 * (`api/error-mapping.ts`) turns them into transport errors.
 */
export class DomainError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The request is malformed or a field is invalid. */
export class ValidationError extends DomainError {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The target URL is not allowed (scheme, private address, credentials…). */
export class ForbiddenTargetError extends ValidationError {}

/** The caller did not present a valid credential. */
export class UnauthenticatedError extends DomainError {}

/** The caller is known but may not do this. */
export class PermissionDeniedError extends DomainError {}

/** No such resource, or it belongs to somebody else (never say which). */
export class NotFoundError extends DomainError {}

/** The resource exists already or the state forbids the change. */
export class ConflictError extends DomainError {}

/** The request is well formed but the state it needs does not hold (a sample for an event the URL does not take). */
export class FailedPreconditionError extends DomainError {}
/** A quota is used up: nothing was written; freeing some (or a higher quota) lets the call succeed. */
export class QuotaExceededError extends DomainError {}

/** The store can't be reached right now (connection lost or refused): nothing was done; retrying later can work. */
export class StoreUnavailableError extends DomainError {}

/**
 * The store has no room to write (a full disk: ENOSPC on the embedded store, SQLSTATE 53100 on
 * PostgreSQL): nothing of the call was written; once space is freed, retrying works.
 */
export class StoreFullError extends DomainError {
  constructor(
    /** What the database said. */
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    super(`the store is full (${detail}): nothing was written; free space on the database's disk, then retry`, options);
  }
}

/** A live watcher read more slowly than activities came: it was cut off instead of buffered without bound. */
export class WatcherTooSlowError extends DomainError {
  constructor(readonly capacity: number) {
    super(
      `watcher cut off: it fell more than ${capacity} activities behind; reconnect with since set to the time of the last activity received`,
    );
  }
}
