const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The canonical (lower-case) form of a uuid given by a user, or undefined when it is not one. */
export function canonicalUuid(text: string): string | undefined {
  const lower = text.toLowerCase();
  return UUID.test(lower) ? lower : undefined;
}
