import { rest } from "./service.js";

/**
 * The REST calls tests make most, each answered as `rest` answers, so that
 * a test asserts on the answer itself. `auth` is the test client's key
 * unless given.
 */
type Headers = Record<string, string> | undefined;

/** POST /api/webhookSubscription: creates a subscription. */
export function postSubscription(baseUrl: string, body: unknown, auth?: Headers) {
  return rest(baseUrl, "POST", "/api/webhookSubscription", body, auth);
}

/** POST /api/webhookSubscription/triggerSampleEventNotification: sends a sample of an event to a URL. */
export function postSample(baseUrl: string, body: unknown, auth?: Headers) {
  return rest(baseUrl, "POST", "/api/webhookSubscription/triggerSampleEventNotification", body, auth);
}

/** POST /api/internal/events/publish: publishes an event (with the admin token as `auth`). */
export function postPublish(baseUrl: string, body: unknown, auth: Headers) {
  return rest(baseUrl, "POST", "/api/internal/events/publish", body, auth);
}
