/** Plain-text output of the `leasehold` command: aligned columns, one-line cells. */

/** Rows of cells as aligned columns; numbers (cells that look like one) are right-aligned. */
export function table(rows: readonly (readonly string[])[], indent = '  '): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) =>
      indent + row.map((cell, i) => (/^-?[\d.,]+( \S+)?$/.test(cell) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd(),
    )
    .join('\n');
}

/** `text` on one line (runs of whitespace become one space), cut to `max` characters. */
export function oneLine(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
