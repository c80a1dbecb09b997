import { durationMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ClientDirectory, IssuedKey } from "../../domain/clients.js";
import type { ApiKeyRecord } from "../../domain/model.js";
import type { ClientService } from "../../gen/webhooks/v1/client_service_pb.js";
import { toClientMessage } from "./messages.js";

/** A key as listed: never its secret (only its hash is stored). */
const toKeyMessage = (record: ApiKeyRecord) => ({
  id: record.id,
  name: record.name,
  createdAt: timestampFromDate(record.createdAt),
  ...(record.lastUsedAt ? { lastUsedAt: timestampFromDate(record.lastUsedAt) } : {}),
  ...(record.revokedAt ? { revokedAt: timestampFromDate(record.revokedAt) } : {}),
});

/** A key just made: the one answer that carries its secret. */
const toApiKeyMessage = (issued: IssuedKey) => ({ ...toKeyMessage(issued.record), key: issued.key });

export function createClientService(deps: { directory: ClientDirectory }): ServiceImpl<typeof ClientService> {
  const { directory } = deps;
  return {
    async createClient(req) {
      const { client, issued } = await directory.create(req.name, {
        ...(req.retention ? { retentionMs: durationMs(req.retention) } : {}),
        maxSubscriptions: req.maxSubscriptions,
      });
      return { client: toClientMessage(client), apiKey: toApiKeyMessage(issued) };
    },

    async listClients() {
      return { clients: (await directory.list()).map(toClientMessage) };
    },

    async updateClient(req) {
      const client = await directory.setLimits(req.clientId, {
        ...(req.retention ? { retentionMs: durationMs(req.retention) } : {}),
        ...(req.maxSubscriptions === undefined ? {} : { maxSubscriptions: req.maxSubscriptions }),
      });
      return { client: toClientMessage(client) };
    },

    async createApiKey(req) {
      return { apiKey: toApiKeyMessage(await directory.issueKey(req.clientId, req.name)) };
    },

    async listApiKeys(req) {
      return { apiKeys: (await directory.listKeys(req.clientId)).map(toKeyMessage) };
    },

    async revokeApiKey(req) {
      await directory.revokeKey(req.clientId, req.keyId);
      return {};
    },

    async disableClient(req) {
      return { client: toClientMessage(await directory.disable(req.clientId, req.reason)) };
    },

    async enableClient(req) {
      return { client: toClientMessage(await directory.enable(req.clientId)) };
    },

    async deleteClient(req) {
      await directory.delete(req.clientId);
      return {};
    },
  };
}
