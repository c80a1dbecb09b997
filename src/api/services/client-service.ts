import { durationMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ClientDirectory, IssuedKey } from "../../domain/clients.js";
import type { ClientService } from "../../gen/webhooks/v1/client_service_pb.js";
import { toClientMessage } from "./messages.js";

const toApiKeyMessage = (issued: IssuedKey) => ({
  id: issued.record.id,
  key: issued.key,
  createdAt: timestampFromDate(issued.record.createdAt),
});

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
      return { apiKey: toApiKeyMessage(await directory.issueKey(req.clientId)) };
    },

    async revokeApiKey(req) {
      await directory.revokeKey(req.clientId, req.keyId);
      return {};
    },
  };
}
