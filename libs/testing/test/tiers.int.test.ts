import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../src/build';

/**
 * Jest runs a file only if its suffix names a tier (jest.config.js): a test file named otherwise would silently
 * stop running, so every file that looks like a test must carry one, in the place its tier lives.
 */
const LOOKS_LIKE_A_TEST = /\.(spec|test)\.[cm]?[jt]sx?$/;
const TIERS: { tier: string; suffix: string; place: RegExp }[] = [
  { tier: 'unit', suffix: '.spec.ts', place: /\/src\// },
  { tier: 'int', suffix: '.int.test.ts', place: /./ },
  // The security suites are system tests too, kept apart so that they read as one list.
  { tier: 'system', suffix: '.system.test.ts', place: /^test\/(system|security)\// },
];
const SKIPPED = new Set(['node_modules', 'dist', 'fixtures']);

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIPPED.has(entry.name) || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return LOOKS_LIKE_A_TEST.test(entry.name) ? [relative(REPO_ROOT, path)] : [];
  });
}

describe('test tiers', () => {
  const files = ['libs', 'services', 'apps', 'tools', 'test'].flatMap((dir) => testFiles(join(REPO_ROOT, dir)));

  it('finds the test files', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it('names every test file by its tier: *.spec.ts, *.int.test.ts or *.system.test.ts', () => {
    expect(files.filter((f) => !TIERS.some((t) => f.endsWith(t.suffix)))).toEqual([]);
  });

  it('keeps unit tests next to their source under src/, system tests under test/system/ or test/security/', () => {
    const misplaced = files.filter((f) => TIERS.some((t) => f.endsWith(t.suffix) && !t.place.test(f)));
    expect(misplaced).toEqual([]);
  });
});
