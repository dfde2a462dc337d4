import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors';

/**
 * Cursor pagination: the cursor holds the last item's sort value and id,
 * so a page boundary is stable while documents are inserted or removed elsewhere.
 */
export interface CursorState {
  v: unknown;
  id: string;
}

/**
 * Cursors are signed (HMAC-SHA256, truncated) together with the account they were issued to: an edited or forged
 * cursor, or one issued to another account, is refused like a malformed one, and what a cursor holds never
 * reaches a store filter unless this deployment made it for this account. Until
 * {@link useCursorSecrets} is called, a key of this process alone signs (cursors then die with the process).
 */
let cursorKeys: Buffer[] = [randomBytes(32)];
const TAG_BYTES = 16;

/** The deployment's secrets, current first; a cursor signed with any of them is accepted (a rotation keeps cursors valid). */
export function useCursorSecrets(secrets: readonly string[]): void {
  if (secrets.length === 0) throw new Error('cursor signing needs at least one secret');
  cursorKeys = secrets.map((secret) => createHmac('sha256', secret).update('estate cursor signing v1').digest());
}

const tagOf = (key: Buffer, scope: string, body: string): Buffer =>
  createHmac('sha256', key).update(`${scope}\n${body}`).digest().subarray(0, TAG_BYTES);

/** A sort value a cursor may carry: what keyset pages compare on, never an object a store would read as an operator. */
const isPosition = (v: unknown): boolean =>
  v === null ||
  typeof v === 'string' ||
  typeof v === 'boolean' ||
  (typeof v === 'number' && Number.isFinite(v)) ||
  (Array.isArray(v) && v.length <= 4 && v.every((x) => !Array.isArray(x) && isPosition(x)));

/** A cursor for the position after `state`, valid only for the account (`scope`) it is issued to. */
export function encodeCursor(state: CursorState, scope: string): string {
  const body = Buffer.from(JSON.stringify(state)).toString('base64url');
  return `${body}.${tagOf(cursorKeys[0], scope, body).toString('base64url')}`;
}

/** The position a cursor holds; 400 `invalid_cursor` unless this deployment issued it to the account `scope`. */
export function decodeCursor(raw: string | undefined, scope: string): CursorState | undefined {
  if (raw === undefined) return undefined;
  const [body, tag, extra] = raw.split('.');
  const given = tag === undefined ? undefined : Buffer.from(tag, 'base64url');
  const signed =
    extra === undefined &&
    given?.length === TAG_BYTES &&
    cursorKeys.some((key) => timingSafeEqual(tagOf(key, scope, body), given));
  if (signed) {
    try {
      const parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<CursorState>;
      if (parsed && typeof parsed === 'object' && typeof parsed.id === 'string' && isPosition(parsed.v))
        return { v: parsed.v, id: parsed.id };
    } catch {
      // fall through
    }
  }
  throw new AppError('invalid_cursor', 'The cursor is not one this API issued; start again without it');
}

export interface SortOrder {
  /** Stored field path to sort by, or 'id'. */
  field: string;
  direction: 1 | -1;
}

/** `sort=-listPrice` -> { field: map.listPrice, direction: -1 }. */
export function parseSort(raw: string | undefined, fields: Record<string, string>, fallback: SortOrder): SortOrder {
  if (!raw) return fallback;
  const direction = raw.startsWith('-') ? -1 : 1;
  const name = raw.replace(/^-/, '');
  const field = fields[name];
  if (!field)
    throw new AppError('validation_failed', `Cannot sort by ${name}`, {
      errors: [{ path: 'sort', message: `must be one of ${Object.keys(fields).join(', ')}` }],
    });
  return { field, direction };
}
