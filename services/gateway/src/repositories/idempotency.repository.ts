import type { DocumentCollection, DocumentStore } from '@estate/store';

export interface IdempotencyDoc {
  /** sha256 of key id, method, path and the client's Idempotency-Key. */
  id: string;
  state: 'running' | 'done';
  requestHash: string;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  createdAt: string;
  expiresAt: string;
}

export async function openIdempotency(store: DocumentStore): Promise<DocumentCollection<IdempotencyDoc>> {
  return store.collection<IdempotencyDoc>('idempotency_keys', [{ fields: { expiresAt: 1 } }]);
}
