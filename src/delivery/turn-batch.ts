/**
 * Items handed over in the same turn of the event loop, sent on together at its end: one
 * message between the threads for all the exchanges (or answers) of that turn.
 */
export function sendPerTurn<T>(send: (items: T[]) => void): (item: T) => void {
  let items: T[] = [];
  return (item) => {
    items.push(item);
    if (items.length === 1) {
      setImmediate(() => {
        const batch = items;
        items = [];
        send(batch);
      });
    }
  };
}
