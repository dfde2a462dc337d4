import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The info-string tag of a fenced block that no test can run (it installs, builds engines, runs every test). */
export const SKIP_TAG = 'skip-test';

export type SnippetLanguage = 'shell' | 'typescript';

export interface Snippet {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  language: SnippetLanguage;
  /** Words after the language in the info string (`bash skip-test` -> ['skip-test']). */
  tags: string[];
  code: string;
  /** The fenced `json` or `text` block right after this one: the answer the docs show. */
  answer?: string;
}

const LANGUAGES: Record<string, SnippetLanguage> = {
  bash: 'shell',
  sh: 'shell',
  shell: 'shell',
  ts: 'typescript',
  typescript: 'typescript',
};

/** The shell and TypeScript fenced blocks of a Markdown file, in order (other blocks only as answers). */
export function extractSnippets(file: string, markdown = readFileSync(file, 'utf8')): Snippet[] {
  const lines = markdown.split('\n');
  const blocks: { line: number; info: string; code: string; endLine: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]);
    blocks.push({ line: start + 1, info: open[1].trim(), code: body.join('\n'), endLine: i + 1 });
  }
  const snippets: Snippet[] = [];
  blocks.forEach((block, index) => {
    const [lang, ...tags] = block.info.split(/\s+/);
    const language = LANGUAGES[lang];
    if (!language) return;
    const next = blocks[index + 1];
    // An answer block follows with at most a blank line between.
    const answer =
      next && ['json', 'text'].includes(next.info) && next.line - block.endLine <= 2 ? next.code : undefined;
    snippets.push({ file, line: block.line, language, tags, code: block.code, answer });
  });
  return snippets;
}

export interface Step {
  /** The command, as written (continuation lines included). */
  command: string;
  /** The `#` comment lines right after it: the answer the docs show for it. */
  answer: string;
}

/** True when bash reads `code` as complete (no open quote, continuation line or `do ... done`). */
function complete(code: string): boolean {
  if (code.endsWith('\\')) return false;
  return spawnSync('bash', ['-n', '-c', code], { stdio: 'ignore' }).status === 0;
}

/**
 * A shell snippet split into its commands, each with the comment lines that follow it, so that a later command
 * can be given the ids an earlier one answered (`curl .../jobs/job_…` after the bulk upsert).
 */
export function shellSteps(code: string): Step[] {
  const steps: Step[] = [];
  let command: string[] = [];
  let answer: string[] = [];
  const flush = () => {
    if (command.length > 0) steps.push({ command: command.join('\n'), answer: answer.join('\n') });
    command = [];
    answer = [];
  };
  for (const line of code.split('\n')) {
    const isComment = /^\s*#/.test(line);
    const open = command.length > 0 && !complete(command.join('\n'));
    if (open) command.push(line);
    else if (isComment && command.length > 0) answer.push(line.replace(/^\s*#\s?/, ''));
    else if (isComment || line.trim() === '') continue;
    else {
      flush();
      command.push(line);
    }
  }
  flush();
  return steps;
}

/** Resource ids as the API makes them (`lst_0mwu4ntwl000VV8AaXCXf2wU59lk`), by prefix. */
const ID = /\b(acc|act|agt|evt|fed|job|key|lead|lst|med|rule|whk)_[A-Za-z0-9_-]{8,}/g;

/** The distinct ids of a text in order of first appearance. */
export function idsIn(text: string): string[] {
  return [...new Set([...text.matchAll(ID)].map((m) => m[0]))];
}

const prefixOf = (id: string) => id.slice(0, id.indexOf('_'));

/**
 * Ids a document shows mapped to the ids the running product answered: the k-th id of a prefix in the
 * documented answer is the k-th id of that prefix in the real one.
 */
export function matchIds(documented: string, actual: string): Map<string, string> {
  const real = idsIn(actual);
  const seen = new Map<string, number>();
  const mapping = new Map<string, string>();
  for (const id of idsIn(documented)) {
    const prefix = prefixOf(id);
    const k = seen.get(prefix) ?? 0;
    seen.set(prefix, k + 1);
    const match = real.filter((r) => prefixOf(r) === prefix)[k];
    if (match) mapping.set(id, match);
  }
  return mapping;
}

/**
 * Fills a snippet's placeholders: ids the docs show become the ones answered earlier, `<prefix>_…` the latest
 * id of that prefix answered, and the documented address the port of the product under test.
 */
export function fillPlaceholders(
  code: string,
  ids: Map<string, string>,
  latest: Map<string, string>,
  port: number,
): string {
  let filled = code;
  for (const [documented, real] of ids) filled = filled.split(documented).join(real);
  filled = filled.replace(/\b(acc|act|agt|evt|fed|job|key|lead|lst|med|rule|whk)_…/g, (whole, prefix: string) => {
    const real = latest.get(prefix);
    if (!real) throw new Error(`No ${prefix}_ id answered before "${whole}" is needed`);
    return real;
  });
  return filled.replace(/127\.0\.0\.1:3000\b/g, `127.0.0.1:${port}`);
}

/** The keys of a documented JSON answer that the real one lacks (`"…"` keys and values stand for "more"). */
export function missingKeys(documented: unknown, actual: unknown, path = ''): string[] {
  if (Array.isArray(documented))
    return documented.length > 0 && Array.isArray(actual) && actual.length > 0
      ? missingKeys(documented[0], actual[0], `${path}[0]`)
      : [];
  if (!documented || typeof documented !== 'object') return [];
  if (!actual || typeof actual !== 'object') return [path || '(root)'];
  return Object.entries(documented as Record<string, unknown>).flatMap(([key, value]) =>
    key === '…'
      ? []
      : key in (actual as Record<string, unknown>)
        ? missingKeys(value, (actual as Record<string, unknown>)[key], path ? `${path}.${key}` : key)
        : [path ? `${path}.${key}` : key],
  );
}

/** The latest id of each prefix in a text. */
export function latestIds(text: string, into: Map<string, string>): void {
  for (const id of idsIn(text)) into.set(prefixOf(id), id);
}
