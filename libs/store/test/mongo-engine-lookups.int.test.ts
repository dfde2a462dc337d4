import { randomUUID } from 'node:crypto';
import { describeWithEngines, planSteps } from '@estate/testing';
import mongoose from 'mongoose';
import { allOf } from '../src/filters';

type PlanNode = Record<string, unknown>;

/**
 * Lookups by `_id` and by an indexed field are answered from an index, at a size where scanning would show: on
 * MongoDB from its own indexes; on the test engine (FerretDB on PostgreSQL) from the GIN indexes that
 * scripts/engines/ferretdb-indexes.sql adds beside FerretDB's own, which cannot serve the `@>` test FerretDB sends
 * (decision 0143). The collection is made here, after the engines started, so the twins come from the event trigger.
 */
describeWithEngines('lookups on the MongoDB-wire engine', ['MONGODB_URL'], (urls) => {
  const dbName = `lookups_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  let client: mongoose.mongo.MongoClient;
  let docs: mongoose.mongo.Collection;
  const COUNT = 2000;

  beforeAll(async () => {
    client = await mongoose.mongo.MongoClient.connect(urls.MONGODB_URL, { serverSelectionTimeoutMS: 5000 });
    docs = client.db(dbName).collection('docs');
    await docs.createIndex({ emailKey: 1 }, { unique: true, sparse: true });
    await docs.createIndex({ accountId: 1, updatedAt: 1 });
    await docs.insertMany(
      Array.from({ length: COUNT }, (_, i) => ({
        _id: `doc_${i}` as unknown as mongoose.mongo.ObjectId,
        accountId: `acc_${i % 10}`,
        emailKey: `acc_${i % 10}:buyer${i}@example.com`,
        updatedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
        body: 'x'.repeat(300),
      })),
    );
  }, 120_000);

  afterAll(async () => {
    await client?.db(dbName).dropDatabase();
    await client?.close();
  });

  it.each([
    ['_id', { _id: 'doc_1234' }],
    ['a field with a unique index', { emailKey: 'acc_4:buyer1234@example.com' }],
    ['_id with another field', { _id: 'doc_1234', accountId: 'acc_4' }],
    // The guard of a compare-and-set `$pull` (the filter, the document read, the array read), as the adapter sends it.
    [
      'the conditions of a compare-and-set',
      allOf([{ _id: 'doc_1234' }, { _id: 'doc_1234' }, { tags: { $exists: false } }, { accountId: 'acc_4' }]),
    ],
  ])('finds by %s without scanning the collection', async (_label, filter) => {
    const found = await docs.find(filter as mongoose.mongo.Filter<mongoose.mongo.Document>).toArray();
    expect(found.map((d) => d._id)).toEqual(['doc_1234']);
    const plan = (await docs.find(filter as mongoose.mongo.Filter<mongoose.mongo.Document>).explain()) as PlanNode;
    const nodes = planSteps(plan.queryPlanner ?? plan);
    if ('filterPushdown' in plan) {
      expect(plan.filterPushdown).toBe(true);
      expect(nodes).not.toContain('Seq Scan');
      expect(nodes.some((n) => /Index Scan/.test(n))).toBe(true);
    } else {
      expect(nodes).not.toContain('COLLSCAN');
    }
  });
});
