import { type DomainError, PermissionDeniedError, UnauthenticatedError } from "./errors.js";
import type { ClientStore } from "./ports.js";

/** How often each instance reads which clients are barred and which keys its open streams hold are still valid. */
export const ACCESS_REFRESH_MS = 2_000;

/** What a disabled client's calls are told. */
export function disabledMessage(clientId: string, reason: string): string {
  return `client ${clientId} is disabled (${reason}); an operator can enable it again (POST /api/internal/clients/${clientId}/enable)`;
}

/** A stream's hold on its key: `signal` aborts, with the error to end the stream with, once the key no longer holds. */
export interface KeyWatch {
  readonly signal: AbortSignal;
  /** The stream ended: stop watching its key. */
  release(): void;
}

interface Watched {
  keyId: string;
  clientId: string;
  abort: AbortController;
}

/**
 * What each instance knows of the clients an operator barred (disabled, or
 * deleted and still being purged) and of the keys its open streams were
 * opened with. A call is authenticated against the store each time; what
 * lives on without asking again — a stream, a pending delivery, a publish
 * fanning out — asks here. The store is read every ACCESS_REFRESH_MS, so a
 * change made on another instance holds here within a few seconds; one made
 * on this instance (`note…`) holds at once.
 */
export class ClientAccess {
  /** Barred clients: the reason each is disabled, undefined for a deleted one. */
  #barred = new Map<string, string | undefined>();
  readonly #watched = new Set<Watched>();
  #timer: NodeJS.Timeout | undefined;
  #refreshing: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      store: Pick<ClientStore, "listBarred" | "validKeys">;
      onError: (error: unknown) => void;
      /** Told when a deleted client is first known here (deleted on this instance or another): its data is to be purged. */
      onDeleted?: () => void;
      refreshMs?: number;
    },
  ) {}

  /** Reads the barred clients once (so that a restart holds their deliveries from the first), then every refresh period. */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => {
      this.#refreshing ??= this.refresh()
        .catch(this.deps.onError)
        .finally(() => {
          this.#refreshing = undefined;
        });
    }, this.deps.refreshMs ?? ACCESS_REFRESH_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#refreshing;
  }

  async refresh(): Promise<void> {
    const watched = [...this.#watched];
    const [barred, valid] = await Promise.all([
      this.deps.store.listBarred(),
      this.deps.store.validKeys([...new Set(watched.map((watch) => watch.keyId))]),
    ]);
    const newlyDeleted = barred.some((client) => client.disabledReason === undefined && !this.#isDeleted(client.id));
    this.#barred = new Map(barred.map((client) => [client.id, client.disabledReason]));
    if (newlyDeleted) this.deps.onDeleted?.();
    const validKeys = new Set(valid);
    for (const watch of watched) {
      // A key that was valid when its stream opened and is no longer: revoked, or its client deleted.
      if (!validKeys.has(watch.keyId)) this.#end(watch, new UnauthenticatedError("the API key this stream was opened with was revoked"));
      else this.#endIfBarred(watch);
    }
  }

  /** Whether the client is barred: its deliveries wait. */
  isBarred(clientId: string): boolean {
    return this.#barred.has(clientId);
  }

  /** Undefined when the client is not barred; else whether it is deleted or why it is disabled. */
  barred(clientId: string): { deleted: true } | { deleted: false; reason: string } | undefined {
    if (!this.#barred.has(clientId)) return undefined;
    const reason = this.#barred.get(clientId);
    return reason === undefined ? { deleted: true } : { deleted: false, reason };
  }

  /** Watches the key a stream was opened with, until `release`. */
  watchKey(keyId: string, clientId: string): KeyWatch {
    const watch: Watched = { keyId, clientId, abort: new AbortController() };
    this.#watched.add(watch);
    return { signal: watch.abort.signal, release: () => this.#watched.delete(watch) };
  }

  noteDisabled(clientId: string, reason: string): void {
    this.#barred.set(clientId, reason);
    for (const watch of this.#watched) this.#endIfBarred(watch);
  }

  noteEnabled(clientId: string): void {
    if (this.#barred.get(clientId) !== undefined) this.#barred.delete(clientId);
  }

  noteDeleted(clientId: string): void {
    this.#barred.set(clientId, undefined);
    for (const watch of this.#watched) this.#endIfBarred(watch);
    this.deps.onDeleted?.();
  }

  noteRevoked(keyId: string): void {
    for (const watch of this.#watched) {
      if (watch.keyId === keyId) this.#end(watch, new UnauthenticatedError("the API key this stream was opened with was revoked"));
    }
  }

  #isDeleted(clientId: string): boolean {
    return this.#barred.has(clientId) && this.#barred.get(clientId) === undefined;
  }

  #endIfBarred(watch: Watched): void {
    const barred = this.barred(watch.clientId);
    if (!barred) return;
    this.#end(
      watch,
      barred.deleted
        ? new UnauthenticatedError("the client this stream's API key belonged to was deleted")
        : new PermissionDeniedError(disabledMessage(watch.clientId, barred.reason)),
    );
  }

  #end(watch: Watched, error: DomainError): void {
    this.#watched.delete(watch);
    watch.abort.abort(error);
  }
}
