/**
 * Counts the calls of one method of `target` (a real store, say), each
 * passed on to the method itself: what a test asserts of how often it wrote.
 */
export function countCalls<T extends object, K extends keyof T>(target: T, method: K): { calls: number } {
  const counter = { calls: 0 };
  const original = target[method];
  if (typeof original !== "function") throw new Error(`${String(method)} is not a method`);
  const forward = original.bind(target) as (...args: unknown[]) => unknown;
  target[method] = ((...args: unknown[]) => {
    counter.calls++;
    return forward(...args);
  }) as T[K];
  return counter;
}
