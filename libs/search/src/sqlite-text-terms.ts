import Database from 'better-sqlite3';
import { TEXT_TOKENIZER } from './sqlite-listing-schema';

/**
 * The text index's terms, read without their postings: FTS5's `instance` vocabulary steps through them one occurrence
 * at a time, so its first row from a term on costs a lookup (the `row` vocabulary would count a term's documents).
 * TEMP: a table of the connection that searches, made when the index opens.
 */
export const TERMS_SCHEMA = `CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_text_terms USING fts5vocab(main, search_text, 'instance')`;
const FIRST_TERM = 'SELECT term FROM temp.search_text_terms WHERE term >= ? AND term < ? LIMIT 1';
/** Words whose terms are kept: `q` repeats a few words far more often than it brings new ones. */
const WORDS_KEPT = 1000;

/**
 * Whether the index holds no term that starts with `term` but `term` itself: then the prefix query `term*` matches the
 * documents that `term` matches, with the same scores, and FTS5 need not first merge every posting of the prefix into
 * one list (decision 0136). Two lookups; a term left only by deleted documents counts too, which keeps the prefix.
 */
export function onlyTermWithPrefix(term: string, run: (sql: string, params: unknown[]) => unknown[]): boolean {
  // No term holds a control character (the tokenizer cuts at them), so `term + U+0001` is the first string after
  // every term equal to `term`, and `term + U+10FFFF` comes after every term that starts with it.
  const end = `${term}\u{10FFFF}`;
  const [first] = run(FIRST_TERM, [term, end]) as Array<{ term: string }>;
  if (first?.term !== term) return false;
  return run(FIRST_TERM, [`${term}\u0001`, end]).length === 0;
}

/** The terms the text index makes of a word (its own tokenizer, on a private in-memory table). */
export class TextTokenizer {
  private db?: Database.Database;
  private statements?: { insert: Database.Statement; terms: Database.Statement; clear: Database.Statement };
  private readonly kept = new Map<string, string[]>();

  tokens(word: string): string[] {
    const known = this.kept.get(word);
    if (known) {
      // Most recently used last: the first key is the one to forget.
      this.kept.delete(word);
      this.kept.set(word, known);
      return known;
    }
    const { insert, terms, clear } = this.open();
    insert.run(word);
    const tokens = terms.all() as string[];
    clear.run();
    if (this.kept.size >= WORDS_KEPT) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(word, tokens);
    return tokens;
  }

  close(): void {
    this.statements = undefined;
    this.db?.close();
    this.db = undefined;
  }

  private open(): NonNullable<TextTokenizer['statements']> {
    if (this.statements) return this.statements;
    this.db = new Database(':memory:');
    this.db.exec(`CREATE VIRTUAL TABLE words USING fts5 (word, tokenize='${TEXT_TOKENIZER}');
      CREATE VIRTUAL TABLE word_terms USING fts5vocab(words, 'instance');`);
    this.statements = {
      insert: this.db.prepare('INSERT INTO words (rowid, word) VALUES (1, ?)'),
      terms: this.db.prepare('SELECT term FROM word_terms ORDER BY "offset"').pluck(),
      clear: this.db.prepare('DELETE FROM words'),
    };
    return this.statements;
  }
}
