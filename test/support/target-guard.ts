import { SETTINGS } from '../../src/config/settings.js';
import { type AddressGuard, type AddressRules, addressGuard } from '../../src/net/address-guard.js';

/** The rules of an unconfigured service: no allow list, NOTIFICATIONS_TARGET_DENY's default. */
export const DEFAULT_TARGET_RULES: AddressRules = { allow: [], deny: SETTINGS.targetDeny.parse(SETTINGS.targetDeny.default) };

/** The address guard of an unconfigured service, resolving with the system resolver. */
export function defaultTargetGuard(): AddressGuard {
  return addressGuard(DEFAULT_TARGET_RULES);
}
