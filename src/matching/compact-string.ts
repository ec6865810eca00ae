/**
 * A copy of `text` in one piece. V8 keeps a string built by concatenation as a rope of its
 * pieces (crypto.randomUUID's uuid is ~14 pieces, ~490 bytes for 36 characters); a string kept
 * for the life of a subscription is worth copying once. The copy goes through UTF-8, so a
 * string that does not survive it (a lone surrogate) is kept as it is.
 */
export function compactCopy(text: string): string {
  const copy = Buffer.from(text, 'utf8').toString('utf8');
  return copy === text ? copy : text;
}
