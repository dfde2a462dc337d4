import { randomUUID } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { describeWithEngines } from '@estate/testing';
import pino from 'pino';
import { ElasticsearchListingIndex } from '../src/elasticsearch-listing.index';
import { fieldQueryContract } from './field-query.contract';
import { listing, listingIndexContract } from './listing-index.contract';

describeWithEngines('elasticsearch listing index', ['ELASTICSEARCH_URL'], (urls) => {
  listingIndexContract('elasticsearch (ELASTICSEARCH_URL)', () => {
    // One alias (and its physical indices) per test; dropped by name, since wildcard deletes may be refused.
    const alias = `contract-${randomUUID()}`;
    return {
      open: async () =>
        ElasticsearchListingIndex.connect(urls.ELASTICSEARCH_URL, { alias, log: pino({ level: 'silent' }) }),
      async cleanup() {
        const admin = new Client({ node: urls.ELASTICSEARCH_URL });
        try {
          const indices = Object.keys(await admin.indices.get({ index: `${alias}-*`, expand_wildcards: 'all' }));
          for (const index of indices) await admin.indices.delete({ index });
        } finally {
          await admin.close();
        }
      },
    };
  });
});

describeWithEngines('elasticsearch RESO field query', ['ELASTICSEARCH_URL'], (urls) => {
  fieldQueryContract('elasticsearch (ELASTICSEARCH_URL)', () => {
    const alias = `reso-${randomUUID()}`;
    return {
      open: async () =>
        ElasticsearchListingIndex.connect(urls.ELASTICSEARCH_URL, { alias, log: pino({ level: 'silent' }) }),
      async cleanup() {
        const admin = new Client({ node: urls.ELASTICSEARCH_URL });
        try {
          const indices = Object.keys(await admin.indices.get({ index: `${alias}-*`, expand_wildcards: 'all' }));
          for (const index of indices) await admin.indices.delete({ index });
        } finally {
          await admin.close();
        }
      },
    };
  });
});

describeWithEngines('elasticsearch listing index bootstrap', ['ELASTICSEARCH_URL'], (urls) => {
  const log = pino({ level: 'silent' });
  const aliases: string[] = [];
  const fresh = () => {
    const alias = `bootstrap-${randomUUID()}`;
    aliases.push(alias);
    return alias;
  };
  let admin: Client;
  beforeAll(() => {
    admin = new Client({ node: urls.ELASTICSEARCH_URL });
  });

  afterAll(async () => {
    for (const alias of aliases) {
      const indices = Object.keys(
        await admin.indices.get({ index: `${alias}*`, expand_wildcards: 'all', ignore_unavailable: true }),
      );
      for (const index of indices) await admin.indices.delete({ index });
    }
    await admin.close();
  });

  it('replicas opening one alias together all succeed, and exactly one creates it', async () => {
    const alias = fresh();
    const replicas = Array.from({ length: 6 }, () =>
      ElasticsearchListingIndex.connect(urls.ELASTICSEARCH_URL, { alias, log }),
    );
    try {
      const opened = await Promise.all(replicas.map((r) => r.open()));
      expect(opened.filter((o) => o.created)).toHaveLength(1);
      expect(await admin.indices.existsAlias({ name: alias })).toBe(true);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });

  it('visible writes made while one is in flight share the next bulk request and its refresh', async () => {
    const alias = fresh();
    const client = new Client({ node: urls.ELASTICSEARCH_URL });
    const index = new ElasticsearchListingIndex({ client, alias, log });
    const bulk = jest.spyOn(client, 'bulk');
    try {
      await index.open();
      const at = '2026-01-01T00:00:00.000Z';
      const listings = Array.from({ length: 12 }, (_, i) =>
        listing(`lst_g${i}`, { price: 100000 + i, updatedAt: at, createdAt: at }),
      );
      // All twelve are asked for in one turn: the first goes at once, the other eleven wait for it and go together.
      await Promise.all(listings.map((l) => index.upsert([{ accountId: 'acc_1', listing: l }], { visible: true })));
      const refreshing = bulk.mock.calls
        .map(([request]) => request as { refresh?: unknown; operations?: unknown[] })
        .filter((request) => request.refresh === true);
      expect(refreshing.map((request) => (request.operations ?? []).length / 2)).toEqual([1, 11]);
      const found = await index.search({
        accountId: 'acc_1',
        filters: {},
        sort: { by: 'listPrice', direction: 'asc' },
        limit: 50,
        facets: [],
      });
      expect(found.total).toBe(12);
    } finally {
      bulk.mockRestore();
      await index.close();
    }
  });

  it('a write before the alias exists fails and creates no index under its name', async () => {
    const alias = fresh();
    const index = ElasticsearchListingIndex.connect(urls.ELASTICSEARCH_URL, { alias, log });
    try {
      await expect(index.remove([{ id: 'lst_1', version: 1 }])).rejects.toThrow();
      expect(await admin.indices.exists({ index: alias })).toBe(false);
      expect(await index.open()).toEqual({ created: true });
      await index.remove([{ id: 'lst_1', version: 1 }]);
    } finally {
      await index.close();
    }
  });
});
