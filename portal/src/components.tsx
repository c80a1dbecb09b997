import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { messageOf } from "./api.js";

/** A failure, announced to screen readers as it appears. */
export function ErrorText({ error, id }: { error: string | undefined; id?: string }) {
  if (!error) return null;
  return (
    <p class="error" role="alert" id={id}>
      {error}
    </p>
  );
}

/** JSON shown as text (escaped by JSX, as everything a client or a receiver wrote), in a region that scrolls. */
export function JsonBlock({ text, label }: { text: string; label: string }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must be reachable by keyboard to scroll it.
    <section class="json" aria-label={label} tabIndex={0}>
      <pre>
        <code>{text}</code>
      </pre>
    </section>
  );
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        await navigator.clipboard.writeText(text);
        setCopied(true);
        setTimeout(() => setCopied(false), 2_000);
      }}
    >
      {copied ? "Copied" : label}
    </button>
  );
}

/** A destructive action asked twice, in the page (no browser dialog). */
export function ConfirmButton({ label, question, onConfirm }: { label: string; question: string; onConfirm: () => void }) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class="danger" onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  return (
    <fieldset class="confirm">
      <legend>{question}</legend>
      <button type="button" class="danger" onClick={onConfirm}>
        Yes, {label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </fieldset>
  );
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section aria-labelledby={`${id ?? title}-title`} class="card">
      <h2 id={`${id ?? title}-title`}>{title}</h2>
      {children}
    </section>
  );
}

/** Pages of a list read by page token: the token of the page shown, and the way back to the earlier ones. */
export interface Pages {
  token: string;
  canGoBack: boolean;
  back(): void;
  forward(next: string): void;
  /** Back to the first page (the list's filter changed). */
  reset(): void;
}

export function usePages(): Pages {
  const [token, setToken] = useState("");
  const [previous, setPrevious] = useState<string[]>([]);
  return {
    token,
    canGoBack: previous.length > 0,
    back: () => {
      setToken(previous.at(-1) ?? "");
      setPrevious(previous.slice(0, -1));
    },
    forward: (next) => {
      setPrevious([...previous, token]);
      setToken(next);
    },
    reset: () => {
      setToken("");
      setPrevious([]);
    },
  };
}

/** Buttons to the page before and the page after (`next`: the token the list answered, empty on its last page). */
export function Pager({ pages, next, labels }: { pages: Pages; next: string | undefined; labels: [back: string, forward: string] }) {
  return (
    <div class="pager">
      <button type="button" disabled={!pages.canGoBack} onClick={pages.back}>
        {labels[0]}
      </button>
      <button type="button" disabled={!next} onClick={() => pages.forward(next ?? "")}>
        {labels[1]}
      </button>
    </div>
  );
}

/** A value loaded from the API, its error, and a way to load it again. */
export function useLoad<T>(
  load: () => Promise<T>,
  inputs: unknown[],
): { value: T | undefined; error: string | undefined; reload: () => void } {
  const [value, setValue] = useState<T>();
  const [error, setError] = useState<string>();
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let current = true;
    load().then(
      (loaded) => {
        if (!current) return;
        setValue(loaded);
        setError(undefined);
      },
      (failure) => current && setError(messageOf(failure)),
    );
    return () => {
      current = false;
    };
  }, [...inputs, generation]);
  return { value, error, reload: useCallback(() => setGeneration((n) => n + 1), []) };
}

/** Runs an action, keeping its error for display; resolves true when it succeeded. */
export function useAction(): { error: string | undefined; busy: boolean; run: (action: () => Promise<unknown>) => Promise<boolean> } {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (failure) {
      setError(messageOf(failure));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { error, busy, run };
}
