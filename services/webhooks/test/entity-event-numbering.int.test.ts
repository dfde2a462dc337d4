import type { EventType } from '@estate/contracts/webhooks';
import type { DocumentStore } from '@estate/store';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import { FeedRepository, positionAt } from '../src/repositories/feed.repository';

const TYPES = ['listing.created', 'listing.updated', 'listing.deleted', 'media.ready'] as const;

/** EntityEventSequence numbering on both store adapters: unique, in feed order, one after another, also when raced. */
describe.each([
  ['sqlite', async (): Promise<DocumentStore | null> => SqliteDocumentStore.open(':memory:')],
  ['mongo', async () => (process.env.MONGODB_URL ? MongoDocumentStore.connect(process.env.MONGODB_URL) : null)],
])('EntityEvent numbering on %s', (name, open) => {
  let store: DocumentStore | null;
  let feed: FeedRepository;
  const account = `acc_num_${name}_${Date.now()}`;

  beforeAll(async () => {
    store = await open();
    if (!store) {
      if (process.env.REQUIRE_ENGINES === '1') throw new Error('MONGODB_URL is needed');
      return;
    }
    feed = await FeedRepository.open(store);
  });
  afterAll(async () => {
    await store?.close();
  });

  it('numbers settled listing and photo events in feed order, each once, under concurrent passes', async () => {
    if (!store) return;
    const start = new Date('2026-01-01T00:00:00Z');
    for (let i = 0; i < 30; i++) {
      const type: EventType = i % 7 === 3 ? 'lead.created' : TYPES[i % TYPES.length];
      await feed.append(
        { id: `evt_${account}_${i}`, type, createdAt: start.toISOString(), accountId: account, data: { id: `r${i}` } },
        new Date(start.getTime() + i),
      );
    }
    const settled = positionAt(start.getTime() + 1000);
    const done = await Promise.all([1, 2, 3].map(() => feed.number(account, TYPES, settled)));
    expect(done.reduce((a, b) => a + b, 0)).toBe(30 - 4);
    const numbered = await feed.numbered(account, {}, { direction: 1, limit: 100 });
    const seqs = numbered.map((d) => d.seq!);
    expect(seqs[0]).toBe(start.getTime() * 1000);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1] + 1);
    const positions = numbered.map((d) => d.pos);
    expect([...positions].sort()).toEqual(positions);
    expect(numbered.map((d) => d.type)).not.toContain('lead.created');
    // Nothing left to number; a range reads a window.
    expect(await feed.number(account, TYPES, settled)).toBe(0);
    const window = await feed.numbered(account, { $gt: seqs[2], $lte: seqs[4] }, { direction: -1, limit: 10 });
    expect(window.map((d) => d.seq)).toEqual([seqs[4], seqs[3]]);
    expect(await feed.countNumbered(account, { $gte: seqs[20] })).toBe(seqs.length - 20);
  });
});
