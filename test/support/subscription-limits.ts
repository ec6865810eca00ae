/** Subscription bodies at and over the limits on stored fields (subscriptions/fields.ts and input.ts). */

export const basic = (username: string, password: string) => ({ type: 'basic', basic: { username, password } });
export const header = (type: string, credentials: string) => ({ type: 'header', header: { type, credentials } });
const extensionsOf = (count: number, value: string) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`ext${i}`, value]));
const urlOf = (characters: number) => `https://example.org/${'a'.repeat(characters - 'https://example.org/'.length)}`;
// Characters are code points: U+1F600 is one, though two UTF-16 units.
const SMILE = '\u{1F600}';

/** Bodies over a limit on stored fields, the message naming the field, the limit and the count. */
export const overLimits = (valid: Record<string, unknown>): Array<[string, Record<string, unknown>, RegExp]> => [
  ['name over 200 characters', { ...valid, name: 'x'.repeat(201) }, /^body\.name: at most 200 characters \(found 201\)$/],
  ['name over 200 code points', { ...valid, name: SMILE.repeat(201) }, /^body\.name: at most 200 characters \(found 201\)$/],
  ['name of 900 KB', { ...valid, name: 'x'.repeat(900_000) }, /^body\.name: at most 200 characters \(found 900000\)$/],
  ['target_url over 2,048 characters', { ...valid, target_url: urlOf(2049) }, /^body\.target_url: at most 2048 characters \(found 2049\)$/],
  [
    'auth basic username over 1,024',
    { ...valid, auth: basic('u'.repeat(1025), 'p') },
    /^body\.auth\.basic\.username: at most 1024 characters \(found 1025\)$/,
  ],
  [
    'auth basic password over 1,024',
    { ...valid, auth: basic('u', SMILE.repeat(1025)) },
    /^body\.auth\.basic\.password: at most 1024 characters \(found 1025\)$/,
  ],
  [
    'auth header type over 1,024',
    { ...valid, auth: header('B'.repeat(1025), 'c') },
    /^body\.auth\.header\.type: at most 1024 characters \(found 1025\)$/,
  ],
  [
    'auth header credentials over 1,024',
    { ...valid, auth: header('Bearer', 'c'.repeat(1025)) },
    /^body\.auth\.header\.credentials: at most 1024 characters \(found 1025\)$/,
  ],
  ['extensions over 16 entries', { ...valid, extensions: extensionsOf(17, 'v') }, /^body\.extensions: at most 16 entries \(found 17\)$/],
  [
    'extension value over 256 characters',
    { ...valid, extensions: { a: 'v'.repeat(257) } },
    /^body\.extensions\.a: at most 256 characters \(found 257\)$/,
  ],
  [
    'extension value over 256 code points',
    { ...valid, extensions: { a: SMILE.repeat(257) } },
    /^body\.extensions\.a: at most 256 characters \(found 257\)$/,
  ],
];

/** A body with every stored field at its limit, counted in code points where it may hold any character. */
export const AT_LIMITS = {
  name: SMILE.repeat(200),
  jsonpath: '$.data',
  target_url: urlOf(2048),
  auth: basic('u'.repeat(1024), SMILE.repeat(1024)),
  extensions: extensionsOf(16, SMILE.repeat(256)),
};
