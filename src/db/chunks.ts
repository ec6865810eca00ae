/**
 * Multi-row statements are split into chunks: both databases take at least 32,766 parameters
 * a statement, so each table's writer sets how many of its rows one statement holds.
 */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
