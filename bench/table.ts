/** Prints rows of objects as an aligned text table. */
export type Row = Record<string, string | number>;

export interface TableOptions {
  /** Fractions shown to this many significant digits (0.0172, not 0.02); by default two decimals. */
  significantDigits?: number;
}

export function printTable(title: string, rows: readonly Row[], options: TableOptions = {}): void {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const cells = rows.map((row) => columns.map((c) => format(row[c], options.significantDigits)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  // Numbers line up on the right; text (the first column, and columns of text only) on the left.
  const left = columns.map((c, i) => i === 0 || rows.every((row) => typeof row[c] !== 'number'));
  const line = (parts: string[]) =>
    parts
      .map((p, i) => (left[i] ? p.padEnd(widths[i]!) : p.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  console.log(`\n${title}`);
  console.log(line(columns));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells) console.log(line(r));
}

function format(value: string | number | undefined, significantDigits: number | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 100 || Number.isInteger(value)) return Math.round(value).toLocaleString('en-US');
  if (significantDigits !== undefined) return value.toPrecision(significantDigits);
  return value.toFixed(Math.abs(value) >= 10 ? 1 : 2);
}
