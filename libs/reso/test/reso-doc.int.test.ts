import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MEDIA_FIELDS, PROPERTY_FIELDS, typeName } from '../src';

/** docs/reso.md shows the mapping table as the code holds it: a field added, renamed or retyped updates the doc. */
describe('docs/reso.md', () => {
  // Table rows with their cells trimmed (the formatter pads them into columns).
  const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'reso.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .split('|')
        .map((cell) => cell.trim())
        .join(' | ')
        .trim(),
    );
  const has = (row: string) =>
    doc.includes(
      row
        .split('|')
        .map((cell) => cell.trim())
        .join(' | ')
        .trim(),
    );

  it('has a row for every Property field, with its type, its source and whether filters and the import use it', () => {
    const rows = PROPERTY_FIELDS.map(
      (f) =>
        `| \`${f.name}\` | \`${typeName(f)}\` | \`${f.path}\` | ${f.indexed ? 'yes' : ''} | ${f.fromReso ? 'yes' : ''} |`,
    );
    expect(rows.filter((row) => !has(row))).toEqual([]);
  });

  it('has a row for every Media field', () => {
    const rows = MEDIA_FIELDS.map((f) => `| \`${f.name}\` | \`${typeName(f)}\` | \`${f.path}\` |`);
    expect(rows.filter((row) => !has(row))).toEqual([]);
  });
});
