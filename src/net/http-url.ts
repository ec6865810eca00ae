import { type AddressGuard, literalRefusal, TargetDeniedError } from './address-guard.js';
import { TargetUrlError } from './network-error.js';

/**
 * `text` as an absolute http(s) URL the guard does not refuse by its literal address: a
 * TargetUrlError when it is not one, a TargetDeniedError when its address is denied. Names are
 * judged when connecting (the guard's lookup).
 */
export function guardedHttpUrl(text: string, guard: AddressGuard): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TargetUrlError('not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TargetUrlError(`${url.protocol} is not http: or https:`);
  const refusal = literalRefusal(url, guard);
  if (refusal !== null) throw new TargetDeniedError(refusal);
  return url;
}
