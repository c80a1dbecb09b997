import { useCallback, useState } from "preact/hooks";
import { type DeliveryActivity, DeliveryActivityKind } from "../../../src/gen/webhooks/v1/delivery_service_pb.js";
import type { Subscription } from "../../../src/gen/webhooks/v1/subscription_pb.js";
import { subscriptions } from "../api.js";
import { ConfirmButton, CopyButton, ErrorText, Section, useAction, useLoad } from "../components.js";
import { formatTime } from "../format.js";
import { href, navigate } from "../router.js";
import { DeliveryControls } from "./delivery-controls.js";
import { DeliveryLog } from "./delivery-log.js";
import { LiveView } from "./live-view.js";

function Settings({ subscription, onSaved }: { subscription: Subscription; onSaved: (updated: Subscription) => void }) {
  const [url, setUrl] = useState(subscription.url);
  const [description, setDescription] = useState(subscription.description);
  const [rateLimit, setRateLimit] = useState(String(subscription.rateLimitPerSecond || ""));
  const [saved, setSaved] = useState(false);
  const save = useAction();
  return (
    <Section title="Settings" id="settings">
      <form
        onSubmit={async (submitted) => {
          submitted.preventDefault();
          setSaved(false);
          await save.run(async () => {
            const rateLimitPerSecond = rateLimit.trim() === "" ? 0 : Number(rateLimit);
            const answer = await subscriptions.updateSubscription({ id: subscription.id, url, description, rateLimitPerSecond });
            if (answer.subscription) onSaved(answer.subscription);
            setSaved(true);
          });
        }}
      >
        <label for="edit-url">Receiver URL</label>
        <input
          id="edit-url"
          type="text"
          inputMode="url"
          value={url}
          onInput={(changed) => setUrl(changed.currentTarget.value)}
          aria-invalid={save.error ? true : undefined}
          aria-describedby={save.error ? "edit-error" : undefined}
        />
        <ErrorText error={save.error} id="edit-error" />
        <label for="edit-description">Description</label>
        <input id="edit-description" type="text" value={description} onInput={(changed) => setDescription(changed.currentTarget.value)} />
        <label for="edit-rate-limit">Most deliveries per second (empty: no limit)</label>
        <input
          id="edit-rate-limit"
          type="number"
          min="0"
          max="10000"
          step="1"
          value={rateLimit}
          onInput={(changed) => setRateLimit(changed.currentTarget.value)}
        />
        <button type="submit" disabled={save.busy}>
          Save
        </button>
        {saved && <p role="status">Saved.</p>}
      </form>
    </Section>
  );
}

function State({ subscription, onChanged }: { subscription: Subscription; onChanged: (updated: Subscription) => void }) {
  const toggle = useAction();
  const sample = useAction();
  const remove = useAction();
  const [sampleJob, setSampleJob] = useState<string>();
  return (
    <Section title="State" id="state">
      <dl>
        <dt>Status</dt>
        <dd>{subscription.enabled ? "Enabled" : "Disabled"}</dd>
        {subscription.disabledReason && (
          <>
            <dt>Disabled because</dt>
            <dd>{subscription.disabledReason}</dd>
            <dt>Disabled at</dt>
            <dd>{formatTime(subscription.disabledAt)}</dd>
          </>
        )}
        <dt>Failing since</dt>
        <dd>{subscription.failingSince ? formatTime(subscription.failingSince) : "Not failing"}</dd>
      </dl>
      <div class="actions">
        <button
          type="button"
          disabled={toggle.busy}
          onClick={() =>
            toggle.run(async () => {
              const answer = await subscriptions.updateSubscription({ id: subscription.id, enabled: !subscription.enabled });
              if (answer.subscription) onChanged(answer.subscription);
            })
          }
        >
          {subscription.enabled ? "Disable" : "Enable"}
        </button>
        <button
          type="button"
          disabled={sample.busy}
          onClick={() =>
            sample.run(async () => {
              setSampleJob(undefined);
              const answer = await subscriptions.triggerSampleEventNotification({ event: subscription.event, url: subscription.url });
              setSampleJob(answer.jobId);
            })
          }
        >
          Send sample
        </button>
        <ConfirmButton
          label="Delete"
          question="Delete this subscription? Its notifications stay answerable by job id."
          onConfirm={async () => {
            if (await remove.run(() => subscriptions.deleteSubscription({ id: subscription.id }))) navigate("subscriptions");
          }}
        />
      </div>
      {sampleJob && <p role="status">Sample sent as {sampleJob}: watch it arrive below.</p>}
      <ErrorText error={toggle.error ?? sample.error ?? remove.error} />
    </Section>
  );
}

function SigningKey({ subscription, onChanged }: { subscription: Subscription; onChanged: (updated: Subscription) => void }) {
  const rotate = useAction();
  const rotating = subscription.nextSignatureKey !== "";
  return (
    <Section title="Signature key" id="key">
      <label for="signature-key">Current key (verifies the signatures you receive)</label>
      <textarea id="signature-key" readOnly rows={4} value={subscription.signatureKey} />
      <div class="actions">
        <CopyButton text={subscription.signatureKey} label="Copy key" />
      </div>
      {rotating && (
        <>
          <label for="next-signature-key">Next key</label>
          <textarea id="next-signature-key" readOnly rows={4} value={subscription.nextSignatureKey} />
          <div class="actions">
            <CopyButton text={subscription.nextSignatureKey} label="Copy next key" />
          </div>
          <p role="status">
            Rotation under way: the next key takes over at <strong>{formatTime(subscription.rotationDeadline)}</strong>, or when you
            confirm.
          </p>
        </>
      )}
      <div class="actions">
        <ConfirmButton
          label="Rotate key"
          question="Start a rotation? Your receiver must accept the next key before it takes over; rotating again replaces it."
          onConfirm={() =>
            rotate.run(async () => {
              const answer = await subscriptions.rotateSignatureKey({ id: subscription.id });
              if (answer.subscription) onChanged(answer.subscription);
            })
          }
        />
        {rotating && (
          <ConfirmButton
            label="Confirm rotation"
            question="Sign with the next key from now on? A receiver that only knows the current key will refuse deliveries."
            onConfirm={() =>
              rotate.run(async () => {
                const answer = await subscriptions.confirmSignatureKeyRotation({ id: subscription.id });
                if (answer.subscription) onChanged(answer.subscription);
              })
            }
          />
        )}
      </div>
      <ErrorText error={rotate.error} />
    </Section>
  );
}

const SETTLED = new Set([
  DeliveryActivityKind.ACCEPTED,
  DeliveryActivityKind.ATTEMPT_FINISHED,
  DeliveryActivityKind.DELIVERED,
  DeliveryActivityKind.FAILED,
  DeliveryActivityKind.SUBSCRIPTION_DISABLED,
]);

export function SubscriptionDetail({ id }: { id: string }) {
  const loaded = useLoad(async () => (await subscriptions.getSubscription({ id })).subscription, [id]);
  const [changed, setChanged] = useState<Subscription>();
  const [refresh, setRefresh] = useState(0);
  const subscription = changed ?? loaded.value;
  const onActivity = useCallback(
    (activity: DeliveryActivity) => {
      if (!SETTLED.has(activity.kind)) return;
      setRefresh((n) => n + 1);
      if (activity.kind === DeliveryActivityKind.SUBSCRIPTION_DISABLED || activity.kind === DeliveryActivityKind.ATTEMPT_FINISHED) {
        setChanged(undefined);
        loaded.reload();
      }
    },
    [loaded.reload],
  );
  return (
    <>
      <p>
        <a href={href("subscriptions")}>← All subscriptions</a>
      </p>
      <ErrorText error={loaded.error} />
      {subscription && (
        <>
          <h1>
            {subscription.event} <span class="hint mono">{subscription.id}</span>
          </h1>
          <p class="url">{subscription.url || "(relay)"}</p>
          <div class="columns">
            <State subscription={subscription} onChanged={setChanged} />
            <Settings subscription={subscription} onSaved={setChanged} key={String(subscription.updatedAt?.seconds)} />
          </div>
          <DeliveryControls subscription={subscription} onSaved={setChanged} />
          <SigningKey subscription={subscription} onChanged={setChanged} />
          <LiveView subscriptionId={subscription.id} onActivity={onActivity} />
          <DeliveryLog subscriptionId={subscription.id} refresh={refresh} />
        </>
      )}
    </>
  );
}
