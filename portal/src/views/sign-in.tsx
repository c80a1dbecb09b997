import { useState } from "preact/hooks";
import { checkCredential, credentials, type Role } from "../api.js";
import { ErrorText, useAction } from "../components.js";
import { navigate } from "../router.js";

function CredentialForm({ who, label, hint, onSignIn }: { who: Role; label: string; hint: string; onSignIn: () => void }) {
  const [value, setValue] = useState("");
  const check = useAction();
  const id = `${who}-secret`;
  return (
    <form
      class="card"
      onSubmit={async (event) => {
        event.preventDefault();
        const secret = value.trim();
        if (!(await check.run(() => checkCredential(who, secret)))) return;
        credentials.set(who, secret);
        setValue("");
        onSignIn();
        navigate(who === "subscriber" ? "subscriptions" : "operator");
      }}
    >
      <h2>{who === "subscriber" ? "Subscriber" : "Operator"}</h2>
      <label for={id}>{label}</label>
      <input
        id={id}
        type="password"
        autocomplete="off"
        required
        value={value}
        onInput={(event) => setValue(event.currentTarget.value)}
        aria-invalid={check.error ? true : undefined}
        aria-describedby={check.error ? `${id}-error ${id}-hint` : `${id}-hint`}
      />
      <ErrorText error={check.error && `Not signed in: ${check.error}`} id={`${id}-error`} />
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
      <button type="submit" disabled={check.busy}>
        Sign in as {who}
      </button>
    </form>
  );
}

export function SignIn({ signedIn, onSignIn }: { signedIn: Record<Role, boolean>; onSignIn: () => void }) {
  return (
    <>
      <h1>Sign in</h1>
      <p>
        The key is kept in this tab's session storage only, and sent to this service with each call. Signed in:{" "}
        {[signedIn.subscriber && "subscriber", signedIn.operator && "operator"].filter(Boolean).join(", ") || "nobody"}.
      </p>
      <div class="columns">
        <CredentialForm
          who="subscriber"
          label="API key"
          hint="Your client's API key, as the operator handed it to you."
          onSignIn={onSignIn}
        />
        <CredentialForm who="operator" label="Admin token" hint="The service's ADMIN_TOKEN." onSignIn={onSignIn} />
      </div>
    </>
  );
}
