import type { Command } from "commander";
import {
  type Client,
  ClientSchema,
  ClientService,
  CreateApiKeyResponseSchema,
  CreateClientResponseSchema,
  ListApiKeysResponseSchema,
  ListClientsResponseSchema,
} from "../../gen/webhooks/v1/client_service_pb.js";
import { UsageError } from "../connection.js";
import { time } from "../output.js";
import type { Context } from "./context.js";

const stateOf = (client: Client) => (client.disabledAt ? `disabled: ${client.disabledReason}` : "enabled");

/** The admin commands about clients (tenants) and their API keys. */
export function addClientCommands(program: Command, context: Context): void {
  const clients = program.command("clients").description("admin: the clients (tenants)");
  clients
    .command("list", { isDefault: true })
    .description("every client")
    .action(async () => {
      const { out, connection } = context();
      const answer = await connection.client(ClientService, "adminToken").listClients({});
      if (out.json) return out.message(ListClientsResponseSchema, answer);
      out.table(
        ["ID", "NAME", "CREATED", "STATE"],
        answer.clients.map((client) => [client.id, client.name, time(client.createdAt), stateOf(client)]),
      );
    });
  clients
    .command("create <name>")
    .description("a new client and its first API key (shown once)")
    .action(async (name: string) => {
      const { out, connection } = context();
      const answer = await connection.client(ClientService, "adminToken").createClient({ name });
      if (out.json) return out.message(CreateClientResponseSchema, answer);
      out.fields([
        ["client", answer.client?.id ?? ""],
        ["api key id", answer.apiKey?.id ?? ""],
        ["api key", answer.apiKey?.key ?? ""],
      ]);
    });
  clients
    .command("disable <clientId>")
    .description("disables a client: its keys get 403, publishes for it are refused, its deliveries wait")
    .option("--reason <text>", "why, told to every call made with its keys")
    .action(async (clientId: string, options: { reason?: string }) => {
      const { out, connection } = context();
      const { client } = await connection.client(ClientService, "adminToken").disableClient({ clientId, reason: options.reason ?? "" });
      if (!client) throw new Error("the service answered without a client");
      if (out.json) return out.message(ClientSchema, client);
      out.line(`disabled ${client.id} (${client.disabledReason})`);
    });
  clients
    .command("enable <clientId>")
    .description("enables a disabled client: its waiting deliveries go out")
    .action(async (clientId: string) => {
      const { out, connection } = context();
      const { client } = await connection.client(ClientService, "adminToken").enableClient({ clientId });
      if (!client) throw new Error("the service answered without a client");
      if (out.json) return out.message(ClientSchema, client);
      out.line(`enabled ${client.id}`);
    });
  clients
    .command("delete <clientId>")
    .description("deletes a client for good: its keys, subscriptions, notifications and attempts")
    .option("--yes", "confirms the deletion (required: it cannot be undone)")
    .action(async (clientId: string, options: { yes?: boolean }) => {
      if (!options.yes) throw new UsageError(`deleting ${clientId} cannot be undone: add --yes to confirm`);
      const { out, connection } = context();
      await connection.client(ClientService, "adminToken").deleteClient({ clientId });
      if (out.json) return out.line(JSON.stringify({ deleted: clientId }));
      out.line(`deleted ${clientId}; its data is purged in the background`);
    });

  const apiKeys = program.command("api-keys").alias("keys").description("admin: a client's API keys");
  apiKeys
    .command("list <clientId>")
    .description("the client's keys, revoked ones too (never their secrets)")
    .action(async (clientId: string) => {
      const { out, connection } = context();
      const answer = await connection.client(ClientService, "adminToken").listApiKeys({ clientId });
      if (out.json) return out.message(ListApiKeysResponseSchema, answer);
      out.table(
        ["ID", "NAME", "CREATED", "LAST USED", "REVOKED"],
        answer.apiKeys.map((key) => [key.id, key.name, time(key.createdAt), time(key.lastUsedAt), time(key.revokedAt)]),
      );
    });
  apiKeys
    .command("create <clientId>")
    .description("a new API key for the client (shown once)")
    .option("--name <text>", "what the key is for, shown when keys are listed")
    .action(async (clientId: string, options: { name?: string }) => {
      const { out, connection } = context();
      const answer = await connection.client(ClientService, "adminToken").createApiKey({ clientId, name: options.name ?? "" });
      if (out.json) return out.message(CreateApiKeyResponseSchema, answer);
      out.fields([
        ["api key id", answer.apiKey?.id ?? ""],
        ["api key", answer.apiKey?.key ?? ""],
      ]);
    });
  apiKeys
    .command("revoke <clientId> <keyId>")
    .description("revokes an API key: calls with it get 401, streams it opened end")
    .action(async (clientId: string, keyId: string) => {
      const { out, connection } = context();
      await connection.client(ClientService, "adminToken").revokeApiKey({ clientId, keyId });
      if (out.json) return out.line(JSON.stringify({ revoked: keyId }));
      out.line(`revoked ${keyId}`);
    });
}
