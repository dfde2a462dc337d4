import { assertIdempotencyKey, fingerprintOf, inProgress, KEEP_MS, recordIdOf, verdictOn } from './idempotency.rules';
import type { IdempotencyDoc, IdempotencyRepository, KeptAnswer } from './repositories/idempotency.repository';

/** A POST under an Idempotency-Key: let it run (keeping its record), or answer it with the first answer. */
export type IdempotencyOutcome = { record: string } | { replay: KeptAnswer };

/**
 * `Idempotency-Key` on POST: the first successful (2xx) answer is kept 24 hours and replayed
 * with its status to a retry; the same key with another body is 422; a retry while the first
 * is still running is 409. Failed attempts are not kept, so a client can fix and retry.
 */
export class IdempotencyService {
  constructor(private readonly deps: { repo: IdempotencyRepository; clock: () => Date }) {}

  async begin(request: {
    keyId: string;
    method: string;
    path: string;
    key: unknown;
    body: unknown;
  }): Promise<IdempotencyOutcome> {
    const { key } = request;
    assertIdempotencyKey(key);
    const { repo } = this.deps;
    const now = this.deps.clock();
    const record: IdempotencyDoc = {
      id: recordIdOf({ ...request, key }),
      state: 'running',
      requestHash: fingerprintOf(request.body),
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + KEEP_MS).toISOString(),
    };
    if (await repo.insert(record)) return { record: record.id };
    const verdict = verdictOn(await repo.find(record.id), record.requestHash, now);
    switch (verdict.kind) {
      case 'start':
        await repo.replace(record);
        return { record: record.id };
      case 'take_over':
        if (!(await repo.takeOver(record.id, verdict.since, record.createdAt))) throw inProgress();
        return { record: record.id };
      case 'replay':
        return { replay: verdict.answer };
    }
  }

  /** Keeps the answer to replay, or (null: the request failed) forgets the record. */
  async finish(record: string, answer: KeptAnswer | null): Promise<void> {
    if (answer) await this.deps.repo.complete(record, answer);
    else await this.deps.repo.release(record);
  }

  /** Drops expired records; run periodically. */
  purgeExpired(): Promise<number> {
    return this.deps.repo.purgeExpired(this.deps.clock().toISOString());
  }
}
