/**
 * A promise and what settles it: fulfilled, or rejected with an error; only
 * the first call counts. A rejection nobody awaits is not reported as
 * unhandled: whoever holds one hears of the failure some other way too.
 */
export function outcome(): { promise: Promise<void>; settle(error?: Error): void } {
  let settle: (error?: Error) => void = () => {};
  const promise = new Promise<void>((resolve, reject) => {
    settle = (error) => (error ? reject(error) : resolve());
  });
  promise.catch(() => {});
  return { promise, settle };
}
