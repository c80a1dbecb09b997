import { useState } from "preact/hooks";
import { clients } from "../api.js";
import { ConfirmButton, CopyButton, ErrorText, Section, useAction, useLoad } from "../components.js";
import { formatTime } from "../format.js";
import { ClientDetail } from "./client-detail.js";

interface ShownKey {
  clientId: string;
  keyId: string;
  key: string;
}

/** A new API key, shown this once: the service keeps only its hash. */
function NewKey({ shown }: { shown: ShownKey }) {
  const revoke = useAction();
  const [revoked, setRevoked] = useState(false);
  return (
    <div class="once" role="status">
      <p>
        New API key <span class="mono">{shown.keyId}</span> for client <span class="mono">{shown.clientId}</span>. It is shown this once:
        copy it now.
      </p>
      <code class="secret">{shown.key}</code> <CopyButton text={shown.key} label="Copy API key" />
      {revoked ? (
        <p>Revoked.</p>
      ) : (
        <ConfirmButton
          label="Revoke"
          question="Revoke this key? Calls made with it are refused from now on."
          onConfirm={async () => setRevoked(await revoke.run(() => clients.revokeApiKey({ clientId: shown.clientId, keyId: shown.keyId })))}
        />
      )}
      <ErrorText error={revoke.error} />
    </div>
  );
}

export function Clients() {
  const list = useLoad(async () => (await clients.listClients({})).clients, []);
  const [name, setName] = useState("");
  const [shown, setShown] = useState<ShownKey>();
  const [managed, setManaged] = useState<string>();
  const [deleted, setDeleted] = useState<string>();
  const action = useAction();
  const managedClient = list.value?.find((client) => client.id === managed);
  return (
    <Section title="Clients and API keys" id="clients">
      <ErrorText error={list.error} />
      <div class="table-scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">Created</th>
              <th scope="col">State</th>
              <th scope="col">Keys</th>
            </tr>
          </thead>
          <tbody>
            {list.value?.map((client) => (
              <tr key={client.id}>
                <td data-label="Name">{client.name}</td>
                <td class="mono" data-label="Id">
                  {client.id}
                </td>
                <td data-label="Created">{formatTime(client.createdAt)}</td>
                <td data-label="State">{client.disabledAt ? `disabled: ${client.disabledReason}` : "enabled"}</td>
                <td data-label="Keys">
                  <button
                    type="button"
                    aria-label={`Keys and state of ${client.name}`}
                    aria-expanded={managed === client.id}
                    onClick={() => setManaged(managed === client.id ? undefined : client.id)}
                  >
                    Keys and state
                  </button>{" "}
                  <button
                    type="button"
                    aria-label={`New API key for ${client.name}`}
                    onClick={() =>
                      action.run(async () => {
                        const key = (await clients.createApiKey({ clientId: client.id })).apiKey;
                        if (key) setShown({ clientId: client.id, keyId: key.id, key: key.key });
                      })
                    }
                  >
                    New API key
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {managedClient && (
        <ClientDetail
          client={managedClient}
          key={managedClient.id}
          newestKey={shown?.keyId ?? ""}
          onChanged={list.reload}
          onDeleted={() => {
            setDeleted(managedClient.name);
            setManaged(undefined);
          }}
        />
      )}
      {deleted && <p role="status">Client {deleted} deleted; its data is purged in the background.</p>}
      {shown && <NewKey shown={shown} key={shown.keyId} />}
      <ErrorText error={action.error} />
      <form
        class="inline"
        onSubmit={async (submitted) => {
          submitted.preventDefault();
          const done = await action.run(async () => {
            const created = await clients.createClient({ name });
            if (created.client && created.apiKey)
              setShown({ clientId: created.client.id, keyId: created.apiKey.id, key: created.apiKey.key });
          });
          if (!done) return;
          setName("");
          list.reload();
        }}
      >
        <label for="client-name">New client's name</label>
        <input id="client-name" type="text" required value={name} onInput={(changed) => setName(changed.currentTarget.value)} />
        <button type="submit" disabled={action.busy}>
          Create client
        </button>
      </form>
    </Section>
  );
}
