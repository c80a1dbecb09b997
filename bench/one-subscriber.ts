/**
 * Scenario (g): the common case, each event to one customer's one endpoint.
 * One subscription per event, so nothing of a publish is shared between
 * notifications; published by 32 calls in flight over each protocol, and in
 * PublishEvents batches of 100 over REST, as an outbox relay would.
 */
import type { Protocol } from "./publisher.js";

export interface OneSubscriberVariant {
  /** What `--only=` takes (`g` runs them all) and what its figures start with, in brackets. */
  scenario: string;
  protocol: Protocol;
  /** Events per call: 1 is PublishEvent, more is PublishEvents. */
  batch: number;
  event: string;
  /** The prefix of its subscription's receiver path; no other scenario's starts the same. */
  tag: string;
}

/** Calls in flight at once, as an internal service's worker pool would make them. */
export const ONE_SUBSCRIBER_PUBLISHERS = 32;

export const ONE_SUBSCRIBER: readonly OneSubscriberVariant[] = [
  { scenario: "g-rest", protocol: "rest", batch: 1, event: "Bench.OneRest", tag: "orest" },
  { scenario: "g-grpc", protocol: "grpc", batch: 1, event: "Bench.OneGrpc", tag: "ogrpc" },
  { scenario: "g-connect", protocol: "connect", batch: 1, event: "Bench.OneConnect", tag: "oconnect" },
  { scenario: "g-batch", protocol: "rest", batch: 100, event: "Bench.OneBatch", tag: "obatch" },
];
