import { useState } from "preact/hooks";
import type { Client } from "../../../src/gen/webhooks/v1/client_service_pb.js";
import { clients } from "../api.js";
import { ConfirmButton, ErrorText, useAction, useLoad } from "../components.js";
import { formatTime } from "../format.js";

/**
 * One client, for an operator: its API keys (never their secrets) with a
 * revoke button each, and disable, enable and delete, each asked twice.
 * `onChanged` reloads the list of clients; `onDeleted` closes this panel.
 */
export function ClientDetail({
  client,
  newestKey,
  onChanged,
  onDeleted,
}: {
  client: Client;
  /** The id of the key made last on this page: the list reloads when it changes. */
  newestKey: string;
  onChanged: () => void;
  onDeleted: () => void;
}) {
  const keys = useLoad(async () => (await clients.listApiKeys({ clientId: client.id })).apiKeys, [client.id, newestKey]);
  const [reason, setReason] = useState("");
  const action = useAction();
  const run = async (change: () => Promise<unknown>) => {
    if (await action.run(change)) {
      keys.reload();
      onChanged();
    }
  };
  return (
    <section class="card client-detail" aria-labelledby="client-detail-title">
      <h3 id="client-detail-title">
        {client.name} <span class="mono">{client.id}</span>
      </h3>
      {client.disabledAt ? (
        <p role="status">
          Disabled since {formatTime(client.disabledAt)}: {client.disabledReason}. Its keys are refused, publishes for it too, and its
          deliveries wait.
        </p>
      ) : null}
      <ErrorText error={keys.error} />
      <div class="table-scroll">
        <table aria-label={`API keys of ${client.name}`}>
          <thead>
            <tr>
              <th scope="col">Key id</th>
              <th scope="col">Name</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Revoked</th>
            </tr>
          </thead>
          <tbody>
            {keys.value?.map((key) => (
              <tr key={key.id}>
                <td class="mono" data-label="Key id">
                  {key.id}
                </td>
                <td data-label="Name">{key.name}</td>
                <td data-label="Created">{formatTime(key.createdAt)}</td>
                <td data-label="Last used">{key.lastUsedAt ? formatTime(key.lastUsedAt) : "never"}</td>
                <td data-label="Revoked">
                  {key.revokedAt ? (
                    formatTime(key.revokedAt)
                  ) : (
                    <ConfirmButton
                      label="Revoke"
                      question={`Revoke key ${key.id}? Calls made with it are refused from now on, and its open streams end.`}
                      onConfirm={() => run(() => clients.revokeApiKey({ clientId: client.id, keyId: key.id }))}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="inline">
        {client.disabledAt ? (
          <ConfirmButton
            label="Enable"
            question={`Enable ${client.name}? Its keys work again and its waiting deliveries go out.`}
            onConfirm={() => run(() => clients.enableClient({ clientId: client.id }))}
          />
        ) : (
          <>
            <label for="disable-reason">Reason for disabling (optional)</label>
            <input id="disable-reason" type="text" value={reason} onInput={(changed) => setReason(changed.currentTarget.value)} />
            <ConfirmButton
              label="Disable"
              question={`Disable ${client.name}? Its keys are refused, publishes for it too, and its deliveries wait until it is enabled.`}
              onConfirm={() => run(() => clients.disableClient({ clientId: client.id, reason }))}
            />
          </>
        )}
        <ConfirmButton
          label="Delete"
          question={`Delete ${client.name} for good? Its keys, subscriptions, notifications and attempts are deleted; this cannot be undone.`}
          onConfirm={async () => {
            if (await action.run(() => clients.deleteClient({ clientId: client.id }))) {
              onChanged();
              onDeleted();
            }
          }}
        />
      </div>
      <ErrorText error={action.error} />
    </section>
  );
}
