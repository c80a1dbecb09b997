import test from "ava";
import { ClientAccess } from "../../src/domain/client-access.js";
import { PermissionDeniedError, UnauthenticatedError } from "../../src/domain/errors.js";
import type { BarredClient } from "../../src/domain/ports.js";

/** A store port whose barred clients and valid keys the test sets. */
function fakeStore() {
  const state = { barred: [] as BarredClient[], validKeys: new Set<string>(), reads: 0 };
  return {
    state,
    store: {
      listBarred: async () => {
        state.reads++;
        return state.barred;
      },
      validKeys: async (ids: readonly string[]) => ids.filter((id) => state.validKeys.has(id)),
    },
  };
}

test("a refresh ends the streams of a revoked key, a disabled client and a deleted one, each with its error", async (t) => {
  const { state, store } = fakeStore();
  let deletions = 0;
  const access = new ClientAccess({ store, onError: (error) => t.fail(String(error)), onDeleted: () => deletions++ });
  state.validKeys = new Set(["key_a", "key_b", "key_c", "key_d"]);
  const revoked = access.watchKey("key_a", "cli_1");
  const ofDisabled = access.watchKey("key_b", "cli_2");
  const ofDeleted = access.watchKey("key_c", "cli_3");
  const untouched = access.watchKey("key_d", "cli_4");
  await access.refresh();
  t.false(revoked.signal.aborted || ofDisabled.signal.aborted || ofDeleted.signal.aborted);

  state.validKeys.delete("key_a");
  state.validKeys.delete("key_c");
  state.barred = [{ id: "cli_2", disabledReason: "unpaid" }, { id: "cli_3" }];
  await access.refresh();
  t.true(revoked.signal.reason instanceof UnauthenticatedError);
  t.regex((revoked.signal.reason as Error).message, /revoked/);
  t.true(ofDisabled.signal.reason instanceof PermissionDeniedError);
  t.regex((ofDisabled.signal.reason as Error).message, /cli_2 is disabled \(unpaid\)/);
  t.true(ofDeleted.signal.reason instanceof UnauthenticatedError, "a deleted client's keys are gone: revoked");
  t.false(untouched.signal.aborted);
  t.deepEqual(access.barred("cli_2"), { deleted: false, reason: "unpaid" });
  t.deepEqual(access.barred("cli_3"), { deleted: true });
  t.is(access.barred("cli_4"), undefined);
  t.is(deletions, 1, "told of the deletion once");
  await access.refresh();
  t.is(deletions, 1, "and not again while it stays deleted");
});

test("what this instance did holds at once: a revocation, a disabling, an enabling, a deletion", async (t) => {
  const { state, store } = fakeStore();
  let deletions = 0;
  const access = new ClientAccess({ store, onError: (error) => t.fail(String(error)), onDeleted: () => deletions++ });
  state.validKeys = new Set(["key_a", "key_b", "key_c"]);
  const revoked = access.watchKey("key_a", "cli_1");
  const ofDisabled = access.watchKey("key_b", "cli_2");
  const released = access.watchKey("key_c", "cli_3");
  released.release();

  access.noteRevoked("key_a");
  t.true(revoked.signal.reason instanceof UnauthenticatedError);
  access.noteDisabled("cli_2", "audit");
  t.true(ofDisabled.signal.reason instanceof PermissionDeniedError);
  t.true(access.isBarred("cli_2"));
  access.noteEnabled("cli_2");
  t.false(access.isBarred("cli_2"));
  access.noteDeleted("cli_3");
  t.false(released.signal.aborted, "a released watch is no longer watched");
  t.true(access.isBarred("cli_3"));
  access.noteEnabled("cli_3");
  t.true(access.isBarred("cli_3"), "enabling does not bring a deleted client back");
  t.is(deletions, 1);
});

test("started, it reads the store at once and then on its period, until stopped", async (t) => {
  const { state, store } = fakeStore();
  state.barred = [{ id: "cli_1", disabledReason: "held" }];
  const access = new ClientAccess({ store, onError: (error) => t.fail(String(error)), refreshMs: 10 });
  await access.start();
  t.true(access.isBarred("cli_1"), "barred from the start, before any delivery runs");
  state.barred = [];
  const deadline = Date.now() + 5_000;
  while (access.isBarred("cli_1") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  t.false(access.isBarred("cli_1"), "the next read enables it");
  await access.stop();
  const reads = state.reads;
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(state.reads, reads, "no read after stop");
});
