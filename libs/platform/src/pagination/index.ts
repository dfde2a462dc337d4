import { AppError } from '../errors';

/**
 * Cursor pagination: the cursor holds the last item's sort value and id,
 * so a page boundary is stable while documents are inserted or removed elsewhere.
 */
export interface CursorState {
  v: unknown;
  id: string;
}

export function encodeCursor(state: CursorState): string {
  return Buffer.from(JSON.stringify(state)).toString('base64url');
}

export function decodeCursor(raw: string | undefined): CursorState | undefined {
  if (raw === undefined) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<CursorState>;
    if (parsed && typeof parsed === 'object' && typeof parsed.id === 'string' && 'v' in parsed)
      return parsed as CursorState;
  } catch {
    // fall through
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
