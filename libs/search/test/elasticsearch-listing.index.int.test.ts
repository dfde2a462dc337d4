import { randomUUID } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { describeWithEngines } from '@estate/testing';
import pino from 'pino';
import { ElasticsearchListingIndex } from '../src/elasticsearch-listing.index';
import { listingIndexContract } from './listing-index.contract';

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
