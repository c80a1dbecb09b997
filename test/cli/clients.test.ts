import test from "ava";
import { runCli } from "../helpers/cli.js";
import { ADMIN_TOKEN, sharedService } from "../helpers/service.js";

const running = sharedService(test);

const asAdmin = () => ({ WEBHOOKS_URL: running.baseUrl, WEBHOOKS_ADMIN_TOKEN: ADMIN_TOKEN });

/** Runs a command with --json; its stdout parsed. */
async function json(args: readonly string[], env: Record<string, string> = asAdmin()): Promise<Record<string, unknown>> {
  const result = await runCli(["--json", ...args], env);
  if (result.code !== 0) throw new Error(`webhooks ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

test("keys list shows names, last use and revocation, never a secret; keys revoke revokes", async (t) => {
  const created = await json(["clients", "create", "CLI keys"]);
  const clientId = String((created.client as { id: string }).id);
  const issued = await json(["keys", "create", clientId, "--name", "deploy bot"]);
  const keyId = String((issued.apiKey as { id: string }).id);
  t.deepEqual(await json(["keys", "revoke", clientId, keyId]), { revoked: keyId });

  const listed = (await json(["keys", "list", clientId])).apiKeys as Array<Record<string, unknown>>;
  t.deepEqual(
    listed.map((key) => [key.name, key.key, typeof key.revokedAt]),
    [
      ["", "", "undefined"],
      ["deploy bot", "", "string"],
    ],
  );
  const table = await runCli(["keys", "list", clientId], asAdmin());
  t.is(table.code, 0, table.stderr);
  t.regex(table.stdout, /^ID\s+NAME\s+CREATED\s+LAST USED\s+REVOKED$/m);
  t.regex(table.stdout, new RegExp(`^${keyId}\\s+deploy bot\\s+\\S+\\s+\\S+$`, "m"), table.stdout);
});

test("clients disable, enable and delete: the client's key is refused, then works, then is gone", async (t) => {
  const created = await json(["clients", "create", "CLI off-boarding"]);
  const clientId = String((created.client as { id: string }).id);
  const asTenant = { WEBHOOKS_URL: running.baseUrl, WEBHOOKS_API_KEY: String((created.apiKey as { key: string }).key) };

  const disabled = await json(["clients", "disable", clientId, "--reason", "contract ended"]);
  t.is(disabled.disabledReason, "contract ended");
  const refused = await runCli(["subscriptions", "list"], asTenant);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /disabled \(contract ended\).*\(permission_denied\)/);
  const listed = await runCli(["clients", "list"], asAdmin());
  t.regex(listed.stdout, new RegExp(`^${clientId}\\s.*disabled: contract ended$`, "m"), listed.stdout);

  const enabled = await runCli(["clients", "enable", clientId], asAdmin());
  t.is(enabled.stdout, `enabled ${clientId}\n`, enabled.stderr);
  t.is((await runCli(["subscriptions", "list"], asTenant)).code, 0);

  const unconfirmed = await runCli(["clients", "delete", clientId], asAdmin());
  t.is(unconfirmed.code, 1);
  t.regex(unconfirmed.stderr, /cannot be undone: add --yes/);
  t.is((await runCli(["subscriptions", "list"], asTenant)).code, 0, "nothing was deleted");
  t.deepEqual(await json(["clients", "delete", clientId, "--yes"]), { deleted: clientId });
  const gone = await runCli(["subscriptions", "list"], asTenant);
  t.regex(gone.stderr, /\(unauthenticated\)/);
  const again = await runCli(["clients", "delete", clientId, "--yes"], asAdmin());
  t.is(again.code, 1);
  t.regex(again.stderr, /not found \(not_found\)/);
});
