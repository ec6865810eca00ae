/**
 * `work`, or the error `timeUp` makes once `ms` have passed, whichever comes first. `work` is
 * not stopped (a promise cannot be): it runs to its end, and what it then says is ignored.
 */
export function within<T>(work: Promise<T>, ms: number, timeUp: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      work.catch(() => undefined);
      reject(timeUp());
    }, ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
