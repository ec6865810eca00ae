/**
 * `work`, or the error `timeUp` makes once `ms` have passed, whichever comes first. `work` is
 * not stopped (a promise cannot be): it runs to its end, and what it then says is ignored.
 */
export function within<T>(work: Promise<T>, ms: number, timeUp: () => Error): Promise<T> {
  // One promise and one timer: it wraps every request's handler, where a race of two promises
  // and a `finally` cost three more.
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeUp()), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
