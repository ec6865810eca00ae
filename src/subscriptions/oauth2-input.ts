/**
 * `auth` `oauth2` as a client sends it, checked beyond its schema: the token endpoint is a URL
 * the service will POST the client's secret to, so it is held to a target URL's rules (http or
 * https, no credentials in it); the strings go into a form body and must be text.
 */
import { serviceError } from '../errors.js';
import { MASKED_SECRET, type OAuth2Credentials } from './fields.js';

export type SentOAuth2 = Partial<Record<keyof OAuth2Credentials, string>>;

// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\x00-\x1f\x7f]/;
// RFC 6749 section 3.3: scope-tokens of %x21 / %x23-5B / %x5D-7E, separated by single spaces.
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*$/;
const FIELD = 'body.auth.oauth2';

export function validateOAuth2(sent: SentOAuth2): OAuth2Credentials {
  for (const name of ['token_url', 'client_id', 'client_secret'] as const)
    if (sent[name] === undefined) throw serviceError('FIELD_REQUIRED', `${FIELD}.${name}`);
  const credentials: OAuth2Credentials = {
    token_url: validateTokenUrl(sent.token_url!),
    client_id: text(sent.client_id!, 'client_id'),
    client_secret: text(sent.client_secret!, 'client_secret'),
  };
  if (sent.scope !== undefined) {
    if (!SCOPE.test(sent.scope))
      throw serviceError(
        'FIELD_INVALID',
        `${FIELD}.scope`,
        'must be scope tokens of visible ASCII (no " or \\) separated by single spaces',
      );
    credentials.scope = sent.scope;
  }
  if (sent.audience !== undefined) credentials.audience = text(sent.audience, 'audience');
  return credentials;
}

function text(value: string, name: keyof OAuth2Credentials): string {
  if (value === '') throw serviceError('FIELD_INVALID', `${FIELD}.${name}`, 'must not be empty');
  if (CONTROL.test(value)) throw serviceError('FIELD_INVALID', `${FIELD}.${name}`, 'must not contain control characters');
  return value;
}

function validateTokenUrl(value: string): string {
  const field = `${FIELD}.token_url`;
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  if (/[\s\x00-\x1f\x7f]/.test(value)) throw serviceError('FIELD_INVALID', field, 'must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw serviceError('FIELD_INVALID', field, 'must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw serviceError('FIELD_INVALID', field, `must be an absolute http or https URL, not ${url.protocol}`);
  if (!/^https?:\/\//i.test(value)) throw serviceError('FIELD_INVALID', field, 'must be written with //');
  if (url.username !== '' || url.password !== '')
    throw serviceError('FIELD_INVALID', field, 'must not contain credentials: the client authenticates with client_id and client_secret');
  if (url.hash !== '') throw serviceError('FIELD_INVALID', field, 'must not have a fragment (RFC 6749 section 3.2)');
  return value;
}

/** Whether the client sent back the mask the record shows instead of the secret. */
export function masksClientSecret(credentials: OAuth2Credentials): boolean {
  return credentials.client_secret === MASKED_SECRET;
}
