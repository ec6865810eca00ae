/**
 * Lets every promise continuation already queued run (a whole chain of them), and nothing
 * timed: with node's mock timers enabled for setTimeout, what a test observes after
 * `await settle()` is what follows from the time it advanced, not from how long it waited.
 * setImmediate runs after the microtask queue is empty and is not among the mocked timers.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
