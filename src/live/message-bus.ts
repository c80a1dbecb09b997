/**
 * Messages between the instances on one database, by topic: PostgreSQL
 * LISTEN/NOTIFY, or a MongoDB change stream. Best effort: a message sent
 * while the connection is down is lost, and a sender hears its own.
 */
export interface MessageBus {
  /** Starts listening; `onConnected` after each (re)connection, when messages sent meanwhile may have been lost. */
  start(onMessage: (topic: string, payload: string) => void, onConnected: () => void): Promise<void>;
  /** Resolves once sent (or once sending failed: the error goes to the bus's error handler). */
  send(topic: string, payload: string): Promise<void>;
  stop(): Promise<void>;
}

/** The topics of the live feed. */
export const TOPICS = {
  /** Activities, batched per turn of the event loop (activity-messages.ts). */
  activity: "wh_live_activity",
  /** `{"s": source, "w": watching, "ask": true?}`: who has watchers; `ask` (on connecting) asks the others to say. */
  interest: "wh_live_interest",
  /** A relay answer reported on one instance, for the instance whose attempt waits for it. */
  relayResult: "wh_live_relay_results",
} as const;
