import "./styles.css";
import { render } from "preact";
import { useState } from "preact/hooks";
import { credentials, type Role } from "./api.js";
import { href, navigate, useRoute } from "./router.js";
import { CatalogView } from "./views/catalog.js";
import { OperatorView } from "./views/operator.js";
import { SignIn } from "./views/sign-in.js";
import { SubscriptionDetail } from "./views/subscription-detail.js";
import { SubscriptionsView } from "./views/subscriptions.js";

function App() {
  const route = useRoute();
  // Re-read on sign-in and sign-out; the values themselves stay in sessionStorage.
  const [, setSignedIn] = useState(0);
  const refresh = () => setSignedIn((n) => n + 1);
  const signedIn = { subscriber: credentials.get("subscriber") !== null, operator: credentials.get("operator") !== null };
  const signOut = (role: Role) => {
    credentials.clear(role);
    refresh();
    navigate();
  };
  const [page, id] = route;

  let main = <SignIn signedIn={signedIn} onSignIn={refresh} />;
  if (page === "events" && signedIn.subscriber) main = <CatalogView />;
  else if (page === "subscriptions" && signedIn.subscriber) main = id ? <SubscriptionDetail id={id} key={id} /> : <SubscriptionsView />;
  else if (page === "operator" && signedIn.operator) main = <OperatorView />;

  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById("main")?.focus()}>
        Skip to content
      </button>
      <header>
        <span class="brand">Webhooks portal</span>
        <nav aria-label="Main">
          <ul>
            {signedIn.subscriber && (
              <>
                <li>
                  <a href={href("subscriptions")} aria-current={page === "subscriptions" ? "page" : undefined}>
                    Subscriptions
                  </a>
                </li>
                <li>
                  <a href={href("events")} aria-current={page === "events" ? "page" : undefined}>
                    Event catalog
                  </a>
                </li>
              </>
            )}
            {signedIn.operator && (
              <li>
                <a href={href("operator")} aria-current={page === "operator" ? "page" : undefined}>
                  Operator
                </a>
              </li>
            )}
            <li>
              <a href={href()} aria-current={page === undefined ? "page" : undefined}>
                Sign in
              </a>
            </li>
            {signedIn.subscriber && (
              <li>
                <button type="button" class="link" onClick={() => signOut("subscriber")}>
                  Sign out subscriber
                </button>
              </li>
            )}
            {signedIn.operator && (
              <li>
                <button type="button" class="link" onClick={() => signOut("operator")}>
                  Sign out operator
                </button>
              </li>
            )}
          </ul>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {main}
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
