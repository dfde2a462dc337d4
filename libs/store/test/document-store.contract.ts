import { randomUUID } from 'node:crypto';
import { DuplicateKeyError, type DocumentStore } from '../src/document-store';

interface Thing {
  id: string;
  accountId: string;
  name: string;
  price?: number;
  tags?: string[];
  nested?: { city: string; zip?: string };
  externalKey?: string;
  version: number;
  outbox?: { eventId: string }[];
}

export interface StoreHarness {
  /** A store over fresh, empty data. */
  open(): Promise<DocumentStore>;
  /** A second store instance over the same data as the last `open()` (a restart). */
  reopen(): Promise<DocumentStore>;
  cleanup?(): Promise<void>;
}

/** The behaviour every document-store adapter must show. */
export function documentStoreContract(name: string, harness: () => StoreHarness | null) {
  describe(`document store contract: ${name}`, () => {
    let h: StoreHarness;
    let store: DocumentStore;
    const col = () =>
      store.collection<Thing>(`things_${suffix}`, [
        { fields: { externalKey: 1 }, unique: true, sparse: true },
        { fields: { accountId: 1, price: 1 } },
      ]);
    let suffix = '';

    beforeEach(async () => {
      const made = harness();
      if (!made) throw new Error('harness unavailable');
      h = made;
      suffix = randomUUID().slice(0, 8);
      store = await h.open();
    });
    afterEach(async () => {
      await store.close();
      await h.cleanup?.();
    });

    const thing = (over: Partial<Thing> = {}): Thing => ({
      id: randomUUID(),
      accountId: 'a1',
      name: 'x',
      version: 1,
      ...over,
    });

    it('inserts and finds by id and by field, without leaking engine ids', async () => {
      const c = await col();
      const t = thing({ name: 'house', nested: { city: 'Austin' } });
      await c.insertOne(t);
      expect(await c.findOne({ id: t.id })).toEqual(t);
      expect(await c.findOne({ 'nested.city': 'Austin' })).toEqual(t);
      expect(await c.findOne({ id: 'nope' })).toBeNull();
      expect(Object.keys((await c.findOne({ id: t.id }))!)).not.toContain('_id');
    });

    it('refuses a duplicate id and a duplicate unique key, but allows documents without the sparse key', async () => {
      const c = await col();
      const t = thing({ externalKey: 'a1|mls|E1' });
      await c.insertOne(t);
      await expect(c.insertOne({ ...t })).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(c.insertOne(thing({ externalKey: 'a1|mls|E1' }))).rejects.toBeInstanceOf(DuplicateKeyError);
      await c.insertOne(thing({ externalKey: 'a2|mls|E1', accountId: 'a2' }));
      await c.insertOne(thing({ externalKey: 'a1|other|E1' }));
      await c.insertOne(thing());
      await c.insertOne(thing());
      expect(await c.count({})).toBe(5);
    });

    it('refuses an update that would break a unique key', async () => {
      const c = await col();
      await c.insertOne(thing({ externalKey: 'k1' }));
      const b = await c.insertOne(thing({ externalKey: 'k2' }));
      await expect(c.updateOne({ id: b.id }, { $set: { externalKey: 'k1' } })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      expect((await c.findOne({ id: b.id }))!.externalKey).toBe('k2');
      await c.updateOne({ id: b.id }, { $unset: { externalKey: true } });
      await c.insertOne(thing({ externalKey: 'k2' }));
    });

    it('filters with $in, $nin, ranges, $ne, $exists, $or, $and and array members', async () => {
      const c = await col();
      await c.insertOne(thing({ id: 'p1', price: 100, tags: ['garage', 'pool'] }));
      await c.insertOne(thing({ id: 'p2', price: 200, tags: ['pool'] }));
      await c.insertOne(thing({ id: 'p3', price: 300 }));
      await c.insertOne(thing({ id: 'p4', accountId: 'a2', price: 150 }));
      const ids = async (f: Record<string, unknown>) => (await c.find(f, { sort: { id: 1 } })).map((t) => t.id);
      expect(await ids({ accountId: 'a1', price: { $gte: 150, $lte: 300 } })).toEqual(['p2', 'p3']);
      expect(await ids({ accountId: 'a1', price: { $gt: 100, $lt: 300 } })).toEqual(['p2']);
      expect(await ids({ id: { $in: ['p1', 'p3', 'zz'] } })).toEqual(['p1', 'p3']);
      expect(await ids({ id: { $nin: ['p1', 'p3'] } })).toEqual(['p2', 'p4']);
      expect(await ids({ tags: 'pool' })).toEqual(['p1', 'p2']);
      expect(await ids({ tags: { $in: ['garage'] } })).toEqual(['p1']);
      expect(await ids({ tags: { $exists: false } })).toEqual(['p3', 'p4']);
      expect(await ids({ accountId: { $ne: 'a1' } })).toEqual(['p4']);
      expect(await ids({ $or: [{ price: 100 }, { accountId: 'a2' }] })).toEqual(['p1', 'p4']);
      expect(await ids({ $and: [{ price: { $gte: 150 } }, { accountId: 'a1' }] })).toEqual(['p2', 'p3']);
      expect(await c.count({ accountId: 'a1' })).toBe(3);
    });

    it('finds a set of ids, with other conditions, a limit and left-out fields', async () => {
      const c = await col();
      const s1 = await c.insertOne(thing({ id: 's1', price: 1, tags: ['a'] }));
      await c.insertOne(thing({ id: 's2', price: 2, accountId: 'a2' }));
      await c.insertOne(thing({ id: 's3', price: 3 }));
      const ids = (docs: Thing[]) => docs.map((t) => t.id).sort();
      expect(ids(await c.find({ id: { $in: ['s1', 's2', 's3', 's1', 'zz'] } }))).toEqual(['s1', 's2', 's3']);
      expect(ids(await c.find({ id: { $in: ['s1', 's2', 's3'] }, accountId: 'a1' }))).toEqual(['s1', 's3']);
      expect(ids(await c.find({ id: { $in: ['s1', 's3'] }, price: { $gt: 1 } }))).toEqual(['s3']);
      expect(await c.find({ id: { $in: ['s1', 's2', 's3'] } }, { limit: 2 })).toHaveLength(2);
      expect(await c.find({ id: { $in: [] } })).toEqual([]);
      const { tags: _tags, ...s1Rest } = s1;
      expect(await c.find({ id: { $in: ['s1'] } }, { omit: ['tags'] })).toEqual([s1Rest]);
    });

    it('matches a field of any sub-document in an array (dotted path through the array)', async () => {
      const c = await store.collection<Thing & { items?: Array<{ status: string }> }>(`galleries_${suffix}`, [
        { fields: { 'items.status': 1 } },
      ]);
      await c.insertOne({ ...thing({ id: 'g1' }), items: [{ status: 'ready' }, { status: 'uploading' }] });
      await c.insertOne({ ...thing({ id: 'g2' }), items: [{ status: 'ready' }] });
      await c.insertOne(thing({ id: 'g3' }));
      const ids = async (f: Record<string, unknown>) => (await c.find(f, { sort: { id: 1 } })).map((t) => t.id);
      expect(await ids({ 'items.status': 'uploading' })).toEqual(['g1']);
      expect(await ids({ 'items.status': { $in: ['ready'] } })).toEqual(['g1', 'g2']);
      expect(await ids({ 'items.status': { $exists: true } })).toEqual(['g1', 'g2']);
      const plain = await store.collection<Thing & { items?: Array<{ status: string }> }>(`plain_${suffix}`);
      await plain.insertOne({ ...thing({ id: 'h1' }), items: [{ status: 'ready' }, { status: 'uploading' }] });
      expect((await plain.find({ 'items.status': 'uploading' })).map((t) => t.id)).toEqual(['h1']);
    });

    it('sorts on several fields, skips and limits (keyset pagination shape)', async () => {
      const c = await col();
      for (const [id, price] of [
        ['b', 2],
        ['a', 2],
        ['c', 1],
        ['d', 3],
      ] as const)
        await c.insertOne(thing({ id, price }));
      const page = await c.find({}, { sort: { price: -1, id: 1 }, limit: 3 });
      expect(page.map((t) => t.id)).toEqual(['d', 'a', 'b']);
      expect((await c.find({}, { sort: { price: -1, id: 1 }, skip: 3 })).map((t) => t.id)).toEqual(['c']);
      const after = await c.find(
        { $or: [{ price: { $lt: 2 } }, { price: 2, id: { $gt: 'a' } }] },
        { sort: { price: -1, id: 1 } },
      );
      expect(after.map((t) => t.id)).toEqual(['b', 'c']);
    });

    it('leaves the fields of `omit` out of what it reads, while filters and sorts still use them', async () => {
      const c = await col();
      const tokens = Array.from({ length: 200 }, (_, i) => `token-${i}`);
      const big = thing({ name: 'agent', price: 2, tags: tokens, nested: { city: 'Austin' } });
      const small = thing({ name: 'agent', price: 1, tags: ['token-x'] });
      await c.insertOne(big);
      await c.insertOne(small);
      const { tags: _bigTags, ...bigRest } = big;
      const { tags: _smallTags, ...smallRest } = small;
      expect(await c.findOne({ id: big.id }, { omit: ['tags'] })).toEqual(bigRest);
      expect(await c.findOne({ tags: 'token-150' }, { omit: ['tags', 'nested'] })).toEqual({
        ...bigRest,
        nested: undefined,
      });
      expect(await c.find({ name: 'agent' }, { omit: ['tags'], sort: { price: -1 } })).toEqual([bigRest, smallRest]);
      expect(await c.find({ tags: 'token-x' }, { omit: ['tags'] })).toEqual([smallRest]);
      // The stored document keeps the field.
      expect((await c.findOne({ id: big.id }))?.tags).toHaveLength(200);
      await expect(c.find({}, { omit: ['nested.city'] })).rejects.toThrow(/cannot omit/);
    });

    it('updates atomically with $set/$inc/$push/$pull/$unset and returns the document after', async () => {
      const c = await col();
      const t = await c.insertOne(thing({ price: 5, tags: ['a'], nested: { city: 'X', zip: '1' } }));
      const after = await c.updateOne(
        { id: t.id, version: 1 },
        {
          $set: { name: 'y', 'nested.city': 'Y' },
          $inc: { version: 1 },
          $push: { outbox: { eventId: 'e1' } },
          $unset: { price: true, 'nested.zip': true },
        },
      );
      expect(after).toEqual({
        ...t,
        name: 'y',
        nested: { city: 'Y' },
        version: 2,
        outbox: [{ eventId: 'e1' }],
        price: undefined,
      });
      expect(after).not.toHaveProperty('price');
      await c.updateOne({ id: t.id }, { $push: { outbox: { eventId: 'e2' } } });
      await c.updateOne({ id: t.id }, { $push: { outbox: { eventId: 'e3' } } });
      const pulled = await c.updateOne({ id: t.id }, { $pull: { outbox: { eventId: { $in: ['e1', 'e3'] } } } });
      expect(pulled!.outbox).toEqual([{ eventId: 'e2' }]);
      const pulledTag = await c.updateOne({ id: t.id }, { $pull: { tags: 'a' } });
      expect(pulledTag!.tags).toEqual([]);
      const pushedMany = await c.updateOne(
        { id: t.id },
        { $push: { outbox: { $each: [{ eventId: 'e4' }, { eventId: 'e5' }] }, fresh: { $each: [1, 2] } } },
      );
      expect(pushedMany!.outbox).toEqual([{ eventId: 'e2' }, { eventId: 'e4' }, { eventId: 'e5' }]);
      expect(pushedMany).toMatchObject({ fresh: [1, 2] });
    });

    it('an update whose filter no longer matches (stale version) changes nothing and resolves to null', async () => {
      const c = await col();
      const t = await c.insertOne(thing());
      expect(await c.updateOne({ id: t.id, version: 7 }, { $set: { name: 'z' } })).toBeNull();
      expect((await c.findOne({ id: t.id }))!.name).toBe('x');
    });

    it('concurrent $inc on one document loses no increment', async () => {
      const c = await col();
      const t = await c.insertOne(thing({ price: 0 }));
      await Promise.all(Array.from({ length: 100 }, () => c.updateOne({ id: t.id }, { $inc: { price: 1 } })));
      expect((await c.findOne({ id: t.id }))!.price).toBe(100);
    });

    it('concurrent pushes and conditional pulls on one array lose nothing', async () => {
      const c = await col();
      const t = await c.insertOne(thing({ outbox: [] }));
      // Each writer appends its entry and removes the one of the writer before it: the last entry is left.
      await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          await c.updateOne({ id: t.id }, { $push: { outbox: { eventId: `e${i}` } } });
          await c.updateOne({ id: t.id }, { $pull: { outbox: { eventId: { $in: [`e${i}`] } } } });
        }),
      );
      await c.updateOne({ id: t.id }, { $push: { outbox: { eventId: 'last' } } });
      expect((await c.findOne({ id: t.id }))!.outbox).toEqual([{ eventId: 'last' }]);
    });

    it('concurrent compare-and-set on a version lets exactly one writer win', async () => {
      const c = await col();
      const t = await c.insertOne(thing());
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          c.updateOne({ id: t.id, version: 1 }, { $set: { name: `w${i}` }, $inc: { version: 1, price: 1 } }),
        ),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      expect(await c.findOne({ id: t.id })).toMatchObject({ version: 2, price: 1 });
    });

    it('updateMany, deleteOne and deleteMany report what they did', async () => {
      const c = await col();
      await c.insertOne(thing({ id: 'd1' }));
      await c.insertOne(thing({ id: 'd2' }));
      await c.insertOne(thing({ id: 'd3', accountId: 'a2' }));
      expect(await c.updateMany({ accountId: 'a1' }, { $set: { name: 'm' } })).toBe(2);
      expect(await c.deleteOne({ id: 'd1' })).toBe(true);
      expect(await c.deleteOne({ id: 'd1' })).toBe(false);
      expect(await c.deleteMany({ accountId: { $in: ['a1', 'a2'] } })).toBe(2);
      expect(await c.count({})).toBe(0);
    });

    it('keeps data across a restart', async () => {
      const c = await col();
      const t = await c.insertOne(thing({ name: 'durable' }));
      await c.updateOne({ id: t.id }, { $set: { name: 'durable-2' } });
      await store.close();
      store = await h.reopen();
      expect((await (await col()).findOne({ id: t.id }))!.name).toBe('durable-2');
    });

    it('answers ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
