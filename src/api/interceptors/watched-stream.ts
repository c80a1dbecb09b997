import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The messages of a streaming response, with `onEnd` told how the stream
 * ended (undefined: completed; `canceled`: the client went away; or the
 * error) and `mapError` applied to an error thrown while it streams (after
 * the call itself has returned, where a plain try/catch no longer reaches).
 */
export async function* watchedStream<T>(
  messages: AsyncIterable<T>,
  onEnd: (outcome: unknown) => void,
  mapError: (error: unknown) => unknown = (error) => error,
): AsyncIterable<T> {
  let outcome: unknown = new ConnectError("the client went away", Code.Canceled);
  try {
    yield* messages;
    outcome = undefined;
  } catch (error) {
    outcome = error;
    throw mapError(error);
  } finally {
    onEnd(outcome);
  }
}
