import { useState } from "preact/hooks";
import { credentials, type Role } from "../api.js";
import { navigate } from "../router.js";

function CredentialForm({ who, label, hint, onSignIn }: { who: Role; label: string; hint: string; onSignIn: () => void }) {
  const [value, setValue] = useState("");
  const id = `${who}-secret`;
  return (
    <form
      class="card"
      onSubmit={(event) => {
        event.preventDefault();
        credentials.set(who, value.trim());
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
        aria-describedby={`${id}-hint`}
      />
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
      <button type="submit">Sign in as {who}</button>
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
