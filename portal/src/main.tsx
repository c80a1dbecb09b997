import "./styles.css";
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { credentials, type Role } from "./api.js";
import { href, navigate, useRoute } from "./router.js";
import { CatalogView } from "./views/catalog.js";
import { OperatorView } from "./views/operator.js";
import { SignIn } from "./views/sign-in.js";
import { SubscriptionDetail } from "./views/subscription-detail.js";
import { SubscriptionsView } from "./views/subscriptions.js";

/**
 * Each page has its own title, and on moving to another page the focus moves
 * to its content: a screen reader reads where the user landed, and the next
 * Tab goes into the page rather than back to the top of the old one.
 */
function useNewPageAnnounced(place: string, title: string) {
  const shown = useRef(place);
  useEffect(() => {
    document.title = `${title} · Webhooks portal`;
  }, [title]);
  useEffect(() => {
    if (shown.current === place) return;
    shown.current = place;
    // A new page starts at its top, the header in view.
    document.getElementById("main")?.focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }, [place]);
}

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
  let title = "Sign in";
  if (page === "events" && signedIn.subscriber) [main, title] = [<CatalogView />, "Event catalog"];
  else if (page === "subscriptions" && signedIn.subscriber)
    [main, title] = id ? [<SubscriptionDetail id={id} key={id} />, `Subscription ${id}`] : [<SubscriptionsView />, "Subscriptions"];
  else if (page === "operator" && signedIn.operator) [main, title] = [<OperatorView />, "Operator"];
  useNewPageAnnounced(route.join("/"), title);

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
